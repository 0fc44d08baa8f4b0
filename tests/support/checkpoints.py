"""The tiny policy checkpoints' shapes, and private copies of them (the session fixtures are read-only)."""

import shutil
from pathlib import Path

TINY_ACT_CHUNK = 10  # actions per chunk of the `tiny_act_dir` fixture's checkpoint
TINY_SMOLVLA_CHUNK = 50  # actions per chunk of the `tiny_smolvla_dir` fixture's checkpoint


def copy_checkpoint(source: Path, destination: Path) -> Path:
    """A private copy of a session checkpoint that a test may modify."""
    shutil.copytree(source, destination)
    return destination
