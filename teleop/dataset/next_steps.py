"""The pasteable commands a refusal to open a dataset ends with, written in one place.

Paths are shell-quoted so a folder with a space still pastes as one argument.
"""

import shlex
from pathlib import Path

ADOPT_MODULE = "teleop.dataset.adopt"
# LeRobot 0.6.1's converter of v2.1 datasets; tests check it still ships with the installed LeRobot.
CONVERT_MODULE = "lerobot.scripts.convert_dataset_v21_to_v30"
CONVERTIBLE_VERSION = "v2.1"  # the only codebase_version that converter reads
# so101-record and so101-deploy both name their dataset folder with this flag.
NEW_FOLDER = "record into a new folder instead (--dataset.root=<new folder>)"


def adopt_command(root: Path) -> str:
    """The command that gives a dataset written by another tool our journal, so it can be resumed."""
    return f"python -m {ADOPT_MODULE} --root={shlex.quote(str(root))}"


def convert_command(repo_id: str | None, root: Path) -> str:
    """LeRobot's command that converts a v2.1 dataset in place (the original is kept beside it as <root>_old).

    `repo_id` None: the caller does not know it, and the command shows where it goes.
    """
    repo = "<user>/<name>" if repo_id is None else shlex.quote(repo_id)
    return f"python -m {CONVERT_MODULE} --repo-id={repo} --root={shlex.quote(str(root))} --push-to-hub=false"
