"""The compiled graphs of a checkpoint, on disk, keyed by what the checkpoint holds; built on first use.

    <cache root>/<sha256 of config.json + model.safetensors + export format, 16 hex>/<fp32|int8>/
        prefix.onnx, denoise.onnx (+ .data), openvino_cache/, source.json

bf16 computes the fp32 graphs (OpenVINO's blob cache keys on the precision it compiled for).

Keyed by content, not path: a checkpoint copied elsewhere reuses its graphs, and one retrained in
place is exported anew. A build writes into a temporary folder beside the entry and renames it in
place when complete, so an interrupted build leaves nothing that a later run would trust.
"""

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Protocol

from policies.compiled.export import DENOISE_FILE, PREFIX_FILE, export_graphs, quantize_int8
from policies.compiled.options import WeightPrecision
from policies.errors import RuntimeChoiceError

EXPORT_FORMAT = "smolvla-graphs-1"  # change when graphs.py or export.py change what the files hold
CACHE_ENV = "SO101_COMPILED_CACHE"  # overrides the cache root
HASHED_FILES = ("config.json", "model.safetensors")
_BLOCK_BYTES = 8 << 20


class BuildProgress(Protocol):
    """What a build reports: a stage's name, and how far the whole build is (0..1)."""

    def update(self, stage: str, done: float) -> None:
        """Report `stage`, with `done` of the whole build finished."""
        ...


class _Silent:
    def update(self, stage: str, done: float) -> None:
        pass


def default_cache_root() -> Path:
    """$SO101_COMPILED_CACHE, else $XDG_CACHE_HOME/so101/compiled, else ~/.cache/so101/compiled."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "so101" / "compiled"


def checkpoint_digest(directory: Path, progress: BuildProgress | None = None, *, share: float = 1.0) -> str:
    """16 hex digits of sha256 over the checkpoint's config and weights and the export format."""
    progress = progress or _Silent()
    digest = hashlib.sha256(EXPORT_FORMAT.encode())
    files = [directory / name for name in HASHED_FILES]
    total = sum(path.stat().st_size for path in files) or 1
    seen = 0
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as stream:
            while block := stream.read(_BLOCK_BYTES):
                digest.update(block)
                seen += len(block)
                progress.update(f"hashing {path.name}", share * seen / total)
    return digest.hexdigest()[:16]


def compiled_graphs(
    policy: Any,
    checkpoint_dir: Path,
    weights: WeightPrecision,
    *,
    cache_root: Path | None = None,
    progress: BuildProgress | None = None,
) -> tuple[Path, bool]:
    """The folder holding `policy`'s graphs at `weights`, and whether it was built now (else reused)."""
    weights = weights.graphs
    progress = progress or _Silent()
    root = cache_root or default_cache_root()
    entry = root / checkpoint_digest(checkpoint_dir, progress, share=0.1)
    target = entry / str(weights)
    if (target / PREFIX_FILE).is_file() and (target / DENOISE_FILE).is_file():
        progress.update("compiled graphs found in the cache", 1.0)
        return target, False
    try:
        entry.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{weights}-", dir=entry))
    except OSError as error:
        raise RuntimeChoiceError(
            f"the compiled graphs cannot be cached in {entry} ({error.strerror}): point {CACHE_ENV} at a folder you"
            f" can write, e.g. export {CACHE_ENV}=/tmp/so101-compiled"
        ) from error
    try:
        _build(policy, staging, weights, progress, exported=entry / str(WeightPrecision.FP32))
        (staging / "source.json").write_text(
            json.dumps({"checkpoint": str(checkpoint_dir), "weights": str(weights), "format": EXPORT_FORMAT}) + "\n"
        )
        try:
            staging.rename(target)
        except OSError:  # another process finished the same build first: theirs is as good
            if not (target / PREFIX_FILE).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target, True


def _build(policy: Any, folder: Path, weights: WeightPrecision, progress: BuildProgress, exported: Path) -> None:
    """Build `weights`' graphs into `folder`; int8 quantizes the cached fp32 graphs in `exported` where complete."""
    reuse = weights is WeightPrecision.INT8 and all((exported / name).is_file() for name in (PREFIX_FILE, DENOISE_FILE))
    fp32 = exported if reuse else folder if weights is WeightPrecision.FP32 else folder / "fp32"
    if not reuse:
        fp32.mkdir(exist_ok=True)
        shares = {"tracing the vision encoder and VLM prefix": 0.15, "tracing one flow-matching step": 0.6}
        export_graphs(policy, fp32, on_stage=lambda stage: progress.update(stage, shares.get(stage, 0.5)))
    if weights is WeightPrecision.INT8:
        for step, name in enumerate((PREFIX_FILE, DENOISE_FILE)):
            progress.update(f"quantizing {name} to 8-bit weights", 0.8 + 0.1 * step)
            quantize_int8(fp32 / name, folder / name)
        if not reuse:
            shutil.rmtree(fp32)
    progress.update("compiled", 1.0)
