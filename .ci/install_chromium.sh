#!/usr/bin/env bash
# Installs the distribution's Chromium and ChromeDriver for the review page's browser tests.
# Playwright drives /usr/bin/chromium (it never downloads a browser of its own).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: the browser tests need Chromium at /usr/bin/chromium; install your distribution's chromium package" >&2
    exit 1
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "error: Chromium is missing and installing it needs root: run 'apt-get install -y chromium chromium-driver' as root" >&2
        exit 1
    fi
fi
echo "installing Debian's chromium and chromium-driver (browser tests of the review page)"
"${as_root[@]}" apt-get update -qq || echo "warning: apt-get update failed; trying the install with the cached package lists" >&2
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq chromium chromium-driver >/dev/null
/usr/bin/chromium --version
