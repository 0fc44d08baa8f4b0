"""Which processor steps a checkpoint may name, checked before LeRobot builds any of them.

LeRobot rebuilds a checkpoint's pre/post-processor from policy_preprocessor.json and
policy_postprocessor.json (`DataProcessorPipeline._resolve_step_class` in lerobot/processor/pipeline.py):

    {"registry_name": "normalizer_processor", "config": {...}}  ->  ProcessorStepRegistry.get(name)(**config)
    {"class": "pkg.module.Name", "config": {...}}  ->  importlib.import_module("pkg.module").Name(**config)

The second form imports and calls any callable a file names (`{"class": "os.system", "config":
{"command": ...}}` runs a command while the checkpoint loads). So every step must name one of the
registered steps LeRobot's own ACT and SmolVLA processors save; a step given by `class`, or any
other registry name, loads only when the user names it in `trust_processor_classes`.

    check_processor_steps(path, json.loads(path.read_text()), trusted=("my_pkg.steps.CropStep",))
"""

from collections.abc import Collection
from pathlib import Path
from typing import Any

from policies.errors import CheckpointError

# The registry names of the steps `make_pre_post_processors` builds for ACT and SmolVLA in LeRobot 0.6.1
# (lerobot/processor/factory.py, lerobot/policies/smolvla/processor_smolvla.py), which lerobot-train saves.
ALLOWED_REGISTRY_NAMES = frozenset(
    {
        "rename_observations_processor",  # RenameObservationsProcessorStep (both)
        "to_batch_processor",  # AddBatchDimensionProcessorStep (both)
        "device_processor",  # DeviceProcessorStep (both, pre and post)
        "normalizer_processor",  # NormalizerProcessorStep (both)
        "unnormalizer_processor",  # UnnormalizerProcessorStep (both, post)
        "smolvla_new_line_processor",  # NewLineTaskProcessorStep (SmolVLA)
        "tokenizer_processor",  # TokenizerProcessorStep (SmolVLA)
    }
)
TRUST_OPTION = "--policy.trust_processor_classes"  # how so101-deploy and so101-replay spell the trust list


def trusted_names(option: str) -> tuple[str, ...]:
    """The names in a comma-separated `trust_processor_classes` option ("" = none)."""
    return tuple(name.strip() for name in option.split(",") if name.strip())


def check_processor_steps(path: Path, spec: Any, trusted: Collection[str] = ()) -> None:
    """Refuse a processor file any of whose steps LeRobot would resolve to something not allowed.

    `trusted` holds extra names that may load: a step's `class` (module.Name) or `registry_name`.
    Resolution follows LeRobot's: `registry_name` when present, else `class`.

    Raises:
        CheckpointError: a step is not a JSON object, names neither, or names what is neither allowed nor trusted.
    """
    steps = spec.get("steps") if isinstance(spec, dict) else None
    if not isinstance(steps, list):
        raise CheckpointError(f"{path} has no 'steps' list; re-copy the checkpoint (lerobot-train writes one)")
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise CheckpointError(f"{path}: step {index} is not a JSON object ({str(step)[:80]}); re-copy the file")
        if "registry_name" in step:
            name = step["registry_name"]
            if isinstance(name, str) and (name in ALLOWED_REGISTRY_NAMES or name in trusted):
                continue
            raise CheckpointError(
                f"{path}: step {index} names registry_name {name!r}, which is not one of LeRobot's ACT and SmolVLA"
                f" steps ({', '.join(sorted(ALLOWED_REGISTRY_NAMES))}); if you trust the code that registers it,"
                f" pass {TRUST_OPTION}={name}"
            )
        name = step.get("class")
        if not isinstance(name, str):
            raise CheckpointError(f"{path}: step {index} names no registry_name or class; re-copy the checkpoint")
        if name not in trusted:
            raise CheckpointError(
                f"{path}: step {index} names class {name!r}, which LeRobot would import and call while loading"
                f" (a checkpoint can run any code that way), so it is refused; if you trust {name}, pass"
                f" {TRUST_OPTION}={name}"
            )
