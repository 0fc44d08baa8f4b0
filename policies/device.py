"""Which torch device a policy runs on: `auto`, `cuda` (or `cuda:N`), `mps` or `cpu`.

`auto` takes the first available of cuda, mps, cpu. Asking for a device this machine does not
have is an error, never a silent fallback: a policy meant for a GPU running on 2 CPU cores is
ten times too slow for 30 FPS, and the user should learn that before the arms move.
"""

import logging
import os
import re

import torch

from policies.errors import DeviceError

logger = logging.getLogger(__name__)

DEVICE_CHOICES = ("auto", "cuda", "cuda:N", "mps", "cpu")
_CUDA = re.compile(r"^cuda(?::(\d+))?$")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def select_device(requested: str = "auto") -> torch.device:
    """The torch device for `requested` (one of `DEVICE_CHOICES`, case-insensitive).

    Raises:
        DeviceError: the value is not a known device, or the device is not available here.
    """
    name = requested.strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "mps":
        if not _mps_available():
            raise DeviceError(
                "device 'mps' was asked for but this machine has no Apple Metal (MPS) device;"
                " use --policy.device=cpu or auto"
            )
        return torch.device("mps")
    match = _CUDA.match(name)
    if match is None:
        raise DeviceError(f"device {requested!r} is not known; use one of {', '.join(DEVICE_CHOICES)}")
    if not torch.cuda.is_available():
        hint = (
            "CUDA_VISIBLE_DEVICES is empty"
            if os.environ.get("CUDA_VISIBLE_DEVICES") == ""
            else f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no CUDA device or driver"
        )
        raise DeviceError(
            f"device {requested!r} was asked for but {hint}; check `nvidia-smi`, or use --policy.device=cpu or auto"
            " (or run the policy on a GPU machine with the remote engine)"
        )
    index = int(match.group(1) or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"device {requested!r} was asked for but this machine has {count} CUDA device(s)")
    return torch.device(name)
