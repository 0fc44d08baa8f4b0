#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter, or explain how to get one and exit 1.
# Order: $PYTHON, then 3.12 (what LeRobot 0.6.1 was measured on), then newer ones;
# on PATH first, then pyenv's installed versions (pyenv shims fail for unselected versions).
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
candidates=()
[ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
pyenv_root=""
command -v pyenv >/dev/null 2>&1 && pyenv_root=$(pyenv root 2>/dev/null)
for minor in 12 13 14 15; do
  path=$(command -v "python3.$minor" 2>/dev/null) && candidates+=("$path")
  if [ -n "$pyenv_root" ]; then
    for dir in $(ls -d "$pyenv_root"/versions/3."$minor".* 2>/dev/null | sort -rV); do
      candidates+=("$dir/bin/python3")
    done
  fi
done
path=$(command -v python3 2>/dev/null) && candidates+=("$path")
for c in "${candidates[@]}"; do
  if ok "$c"; then
    "$c" -c 'import sys; print(sys.executable)'
    exit 0
  fi
done
cat >&2 <<'MSG'
error: no Python 3.12 or newer found (LeRobot 0.6.1 needs it).
  Looked at: $PYTHON, python3.12..python3.15 and python3 on PATH, and pyenv's versions.
  Install one (e.g. `pyenv install 3.12`, or your distribution's python3.12 package),
  or name it: `make test PYTHON=/path/to/python3.12`.
MSG
exit 1
