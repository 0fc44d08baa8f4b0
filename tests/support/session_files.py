"""Records the whole test session shares, in one folder, whichever process of the session writes them.

Under pytest-xdist each worker is a process of its own; the controller prints the session's
summary. So what a summary counts (in-test retries, next steps printed, threads left real-time) is
appended as JSON lines to a file in the folder `$SO101_TEST_SESSION_DIR` names: the first process to
load tests/conftest.py sets it, and the workers it starts inherit it.

    append("retries", {"test": ..., "what": ...})     # one line, appended whole (O_APPEND)
    read("retries")                                    # every line so far, from every process
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Any

SESSION_DIR_ENV = "SO101_TEST_SESSION_DIR"


def session_dir() -> Path:
    """The session's shared folder (made by the first process that asks; inherited by the workers)."""
    if not os.environ.get(SESSION_DIR_ENV):
        os.environ[SESSION_DIR_ENV] = tempfile.mkdtemp(prefix="so101-session-")
    return Path(os.environ[SESSION_DIR_ENV])


def path(kind: str) -> Path:
    """The JSON-lines file of `kind`."""
    return session_dir() / f"{kind}.jsonl"


def append(kind: str, record: dict[str, Any]) -> None:
    """Append `record` as one line: one write call, which O_APPEND keeps whole beside other processes'."""
    with open(path(kind), "a") as out:
        out.write(json.dumps(record) + "\n")


def read(kind: str) -> list[dict[str, Any]]:
    """Every record of `kind` appended so far in the session."""
    try:
        lines = path(kind).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def is_worker() -> bool:
    """Whether this process is a pytest-xdist worker (the controller, or a plain run, sums up)."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))
