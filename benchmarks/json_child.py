"""A benchmark's measurement in a fresh interpreter: a clean peak RSS and no state shared with the parent."""

import json
import subprocess
import sys


def run_json_child(module: str, arguments: list[str]) -> dict:
    """`python -m module arguments`; its last stdout line, parsed as JSON. Exits with its stderr's tail if it fails."""
    done = subprocess.run([sys.executable, "-m", module, *arguments], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"child {module} {' '.join(arguments[:3])} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])
