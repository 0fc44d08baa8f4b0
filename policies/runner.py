"""One way from a checkpoint folder to a predictor, for so101-deploy and so101-replay alike.

    PolicyOptions ──check(rig)──> CheckedPolicy (config and processor files read, contract checked: no weights)
                  ──load(checked)──> LoadedPredictor (weights on a device, LeRobot's processors, the contract's mapping)
                  ──policies.engines.factory.make_engine──> the engine the control loop asks each tick

The two steps stay apart so that a checkpoint that does not fit the rig is refused, every difference
listed, before seconds of weight loading; deploy prints what it checked in between. The heavy
modules (torch, LeRobot's policies) are imported only when a checkpoint is read: `--help` and a bad
option answer at once.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policies.compiled.options import PolicyRuntime, WeightPrecision
from robot.joint_units import JointUnits

if TYPE_CHECKING:
    from policies.checkpoint import Checkpoint
    from policies.contract import Contract, RigSpec
    from policies.predictor import LeRobotPredictor


@dataclass(frozen=True)
class PolicyOptions:
    """Which checkpoint runs, where, and how the rig's names map onto it."""

    path: str = ""  # checkpoint directory (lerobot-train's .../pretrained_model); a hub id: `hf download` it first
    revision: str | None = None  # hub branch, tag or commit (for `hf download`)
    device: str = "auto"  # auto, cuda, cuda:<n>, mps or cpu
    rename_map: str = ""  # rig -> checkpoint camera names, e.g. '{"overhead": "top"}'
    # SmolVLA offline: a folder with the VLM's config and tokenizer
    vlm_model_name: str | None = None
    # Comma-separated processor steps to load beyond LeRobot's ACT/SmolVLA ones (a step's module.Class,
    # whose code then runs here, or registry_name); only for checkpoints you trust
    trust_processor_classes: str = ""
    # The joint units the checkpoint was trained in: auto (read from its statistics), degrees (ours and
    # LeRobot 0.6.1's) or percent (LeRobot's -100..100 of range: refused on the arms, which take degrees)
    units: JointUnits = JointUnits.AUTO
    # A blind evaluation (so101-campaign): say "policy <label>", never the checkpoint's path or type
    blind_label: str | None = None
    # torch, or SmolVLA compiled for the CPU: openvino or onnxruntime
    runtime: PolicyRuntime = PolicyRuntime.TORCH
    # fp32 (exact), bf16 (CPUs with native bf16) or int8 (faster, inexact)
    precision: WeightPrecision = WeightPrecision.FP32
    # SmolVLA's flow steps per chunk (empty: the checkpoint's)
    flow_steps: int | None = None
    # CPU threads for inference (empty: all, or all but one over 2)
    threads: int | None = None

    @property
    def given(self) -> bool:
        """Whether a checkpoint (or replay's `recorded`) was named."""
        return bool(self.path.strip())


@dataclass(frozen=True)
class CheckedPolicy:
    """A checkpoint whose files were read and whose features fit the rig; no weights loaded yet."""

    checkpoint: "Checkpoint"
    contract: "Contract"

    def describe(self) -> str:
        """One line: the policy type, its chunk, and the cameras it will be shown."""
        features = self.checkpoint.features
        return (
            f"{features.policy_type}, chunk {features.chunk_size} ({features.n_action_steps} executed),"
            f" cameras {', '.join(self.contract.camera_keys.values())}"
        )


@dataclass(frozen=True)
class LoadedPredictor:
    """A checked checkpoint's weights on a device, as the predictor every engine calls."""

    predictor: "LeRobotPredictor"
    device: Any  # the torch device the weights are on
    compiled: Any = None  # the CompiledSmolVLA computing its chunks (--policy.runtime other than torch), or None


class PolicyRunner:
    """Reads, checks and loads the checkpoint `options` name (deploy and replay share every step)."""

    def __init__(self, options: PolicyOptions) -> None:
        self.options = options

    def check(self, rig: "RigSpec") -> CheckedPolicy:
        """Read the checkpoint's config and processor files and check them against `rig` (no weights).

        Raises:
            CheckpointError: a file is missing or unreadable, a hub id, or a processor step not trusted.
            ContractError: the checkpoint's cameras, image sizes, state or action do not fit the rig.
        """
        from policies.checkpoint import CheckpointSource, read_checkpoint
        from policies.contract import check_contract, parse_rename_map
        from policies.processor_allowlist import trusted_names

        options = self.options
        trusted = trusted_names(options.trust_processor_classes)
        checkpoint = read_checkpoint(CheckpointSource(options.path, options.revision, options.vlm_model_name, trusted))
        contract = check_contract(checkpoint.features, rig, parse_rename_map(options.rename_map))
        self._check_runtime(checkpoint)
        return CheckedPolicy(checkpoint, contract)

    def load(self, checked: CheckedPolicy) -> LoadedPredictor:
        """Load the checked checkpoint's weights and LeRobot's processors on `options.device`.

        Raises:
            DeviceError: the device asked for is not available.
            CheckpointError: the weights or the processors' state do not load.
        """
        from policies.checkpoint import load_policy
        from policies.predictor import LeRobotPredictor

        options = self.options
        loaded = load_policy(checked.checkpoint, "cpu" if options.runtime.compiled else options.device)
        if options.flow_steps is not None:
            loaded.policy.config.num_steps = options.flow_steps  # read per chunk by SmolVLA's sampler
        compiled = None
        if options.runtime.compiled:
            from policies.compiled.build import compile_smolvla

            compiled = compile_smolvla(loaded, options.runtime, options.precision, options.threads)
        forward = compiled.predict_action_chunk if compiled else None
        predictor = LeRobotPredictor(loaded, checked.contract, num_threads=options.threads, forward=forward)
        return LoadedPredictor(predictor, loaded.device, compiled)

    def _check_runtime(self, checkpoint: "Checkpoint") -> None:
        from policies.compiled.build import refuse_unfit
        from policies.errors import RuntimeChoiceError

        options = self.options
        policy_type = checkpoint.features.policy_type
        refuse_unfit(options.runtime, options.precision, policy_type, checkpoint.config, checkpoint.directory)
        if options.flow_steps is not None and (policy_type != "smolvla" or options.flow_steps < 1):
            raise RuntimeChoiceError(
                f"--policy.flow_steps={options.flow_steps}: a SmolVLA checkpoint takes 1 or more flow-matching steps"
                f" ({checkpoint.directory} holds a {policy_type} policy); drop the option or pass e.g. 5"
            )
        if options.runtime.compiled and options.device not in ("auto", "cpu"):
            raise RuntimeChoiceError(
                f"--policy.runtime={options.runtime} runs on the CPU: drop --policy.device={options.device},"
                " or use --policy.runtime=torch on the GPU"
            )
        if options.threads is not None and options.threads < 1:
            raise RuntimeChoiceError(f"--policy.threads={options.threads}: pass 1 or more, or leave it out")
