"""A checkpoint folder's content identity: the same files with the same bytes give the same identity.

    sha256:<hex>  over (relative path, size, SHA-256 of the bytes) of every file, in path order

A resumed campaign compares it with campaign.json, so a checkpoint retrained or overwritten in place
between two sittings is caught instead of silently mixed into one policy's episodes. Reading the
files takes about a second per GB.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from evaluation.campaign.errors import CampaignError

_CHUNK = 1 << 20  # bytes read at a time


def checkpoint_identity(folder: Path) -> str:
    """The content identity of a checkpoint folder.

    Raises:
        CampaignError: the folder does not exist, is not a folder, holds no file, or a file cannot be read.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise CampaignError(
            f"checkpoint {folder} is not a folder. Next: pass lerobot-train's .../checkpoints/<step>/pretrained_model"
        )
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    if not files:
        raise CampaignError(f"checkpoint {folder} holds no file. Next: pass a folder lerobot-train wrote")
    outer = hashlib.sha256()
    try:
        for path in files:
            outer.update(f"{path.relative_to(folder).as_posix()}\0{path.stat().st_size}\0{_digest(path)}\n".encode())
    except OSError as e:
        raise CampaignError(f"cannot read checkpoint {folder}: {e}") from e
    return f"sha256:{outer.hexdigest()}"


def _digest(path: Path) -> str:
    inner = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            inner.update(chunk)
    return inner.hexdigest()
