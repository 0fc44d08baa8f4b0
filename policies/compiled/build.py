"""From a loaded SmolVLA to its compiled runner: check the options, find or build the graphs, open them."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from policies.compiled.cache import BuildProgress, compiled_graphs
from policies.compiled.cpu import BF16_FLAGS, CpuFacts, read_cpu
from policies.compiled.options import PolicyRuntime, WeightPrecision
from policies.compiled.smolvla import CompiledSmolVLA
from policies.errors import RuntimeChoiceError


def refuse_unfit(
    runtime: PolicyRuntime,
    precision: WeightPrecision,
    policy_type: str,
    config: Any,
    where: Path,
    cpu: CpuFacts | None = None,
) -> None:
    """Raise `RuntimeChoiceError` when `runtime` and `precision` cannot run this checkpoint (no weights read yet).

    `cpu`: this machine's (read from the kernel when None).
    """
    if precision is WeightPrecision.INT8 and not runtime.compiled:
        raise RuntimeChoiceError(
            "--policy.precision=int8 quantizes the compiled graphs: add --policy.runtime=openvino (or onnxruntime)"
        )
    if precision is WeightPrecision.BF16:
        _refuse_bf16(runtime, cpu or read_cpu())
    if not runtime.compiled:
        return
    if policy_type != "smolvla":
        raise RuntimeChoiceError(
            f"--policy.runtime={runtime} compiles SmolVLA checkpoints only; {where} holds a {policy_type} policy:"
            " run it with --policy.runtime=torch"
        )
    if getattr(config, "adapt_to_pi_aloha", False):
        raise RuntimeChoiceError(
            f"{where}: the compiled runtime does not carry SmolVLA's adapt_to_pi_aloha remapping; run it with"
            " --policy.runtime=torch"
        )


def _refuse_bf16(runtime: PolicyRuntime, cpu: CpuFacts) -> None:
    if runtime is not PolicyRuntime.OPENVINO:
        raise RuntimeChoiceError(
            f"--policy.precision=bf16 is computed by OpenVINO's CPU plugin, not --policy.runtime={runtime}:"
            " use --policy.runtime=openvino --policy.precision=bf16"
        )
    if not cpu.native_bf16:
        raise RuntimeChoiceError(
            f"--policy.precision=bf16 needs a CPU with native bf16 ({' or '.join(BF16_FLAGS)} in /proc/cpuinfo's"
            f" flags); {cpu.name} has neither: use --policy.precision=fp32 (exact) or --policy.precision=int8"
        )


def compile_smolvla(
    loaded: Any, runtime: PolicyRuntime, precision: WeightPrecision, threads: int | None, *, quiet: bool = False
) -> CompiledSmolVLA:
    """The compiled runner of a loaded SmolVLA (built into the cache on first use, with a progress bar)."""
    directory = loaded.checkpoint.directory
    with _progress(f"compiling {directory.name} for {runtime} ({precision})", quiet) as progress:
        folder, built = compiled_graphs(loaded.policy, directory, precision, progress=progress)
    if built and not quiet:
        print(f"compiled graphs cached in {folder} (reused while the checkpoint is unchanged)", file=sys.stderr)
    from policies.predictor import default_num_threads

    # As torch's: every core on 1-2 cores, else one left for the control loop (--policy.threads' help)
    return CompiledSmolVLA(
        loaded.policy, folder, runtime, threads=threads or default_num_threads(), precision=precision
    )


class _RichProgress:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress, self._task = progress, task

    def update(self, stage: str, done: float) -> None:
        self._progress.update(self._task, completed=round(done * 1000), stage=stage)


class _NoProgress:
    def update(self, stage: str, done: float) -> None:
        pass


@contextmanager
def _progress(title: str, quiet: bool) -> Iterator[BuildProgress]:
    if quiet:
        yield _NoProgress()
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[stage]}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as progress:
        yield _RichProgress(progress, progress.add_task(title, total=1000, stage="hashing the checkpoint"))


__all__ = ["compile_smolvla", "refuse_unfit"]
