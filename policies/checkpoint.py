"""Load an ACT or SmolVLA checkpoint in two steps, so the rig contract is checked before any weights load.

    read_checkpoint(source)   config.json + processor files only  ->  Checkpoint (features, chunk size)
          │                                                            │
          │                         policies.contract.check_contract(checkpoint.features, rig, rename_map)
          ▼
    load_policy(checkpoint, device="auto")   model.safetensors + LeRobot's pre/post-processors  ->  LoadedPolicy

A source is a local directory as `lerobot-train` writes it (`.../checkpoints/last/pretrained_model`,
or its parent `last`). A hub id is refused with the command that downloads it (`hf download`): the
files are then checked here like any folder's. Every missing or unreadable file is named in a
`CheckpointError` with the next step.

Loading a checkpoint runs no code it names. Each processor step must be one of LeRobot's ACT and
SmolVLA steps (`policies.processor_allowlist`; others only when listed in `trust_processor_classes`),
checked when the files are read and again just before LeRobot builds the processors. Weights come
from safetensors files only: a folder holding only pickle weights (`.bin`, `.pt`, ...) is refused,
and ACT's torchvision backbone is not fetched (`model.safetensors` holds it).

SmolVLA also needs its vision-language model's config and tokenizer (`vlm_model_name`, by default
the hub id `HuggingFaceTB/SmolVLM2-500M-Video-Instruct`). Offline, keep a local copy of those files
(config, processor and tokenizer, about 4 MB; no weights) and pass it as `vlm_model_name`.

In a command:

    checkpoint = read_checkpoint(CheckpointSource("outputs/train/act_fold/checkpoints/last/pretrained_model"))
    check_contract(checkpoint.features, RigSpec.from_rig_config(rig_config))
    loaded = load_policy(checkpoint, device="auto")
"""

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from policies.contract import PolicyFeatures, features_from_config
from policies.device import select_device
from policies.errors import CheckpointError
from policies.lerobot_policy import build_policy, make_processors, parse_config
from policies.processor_allowlist import check_processor_steps
from policies.state_sides import read_joint_statistics
from robot.lerobot_edge import lerobot_home

logger = logging.getLogger(__name__)

SUPPORTED_TYPES = ("act", "smolvla")
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
PREPROCESSOR_FILE = "policy_preprocessor.json"
POSTPROCESSOR_FILE = "policy_postprocessor.json"
TRAIN_CONFIG_FILE = "train_config.json"  # written by lerobot-train next to the weights; optional
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# Weight files torch.load (pickle) reads: loading one can run code, so none is ever read.
PICKLE_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


@dataclass(frozen=True)
class CheckpointSource:
    """Where a policy comes from, as the user gives it."""

    path: str  # a local checkpoint directory (a hub id is refused with the `hf download` command for it)
    revision: str | None = None  # hub branch, tag or commit, put in that `hf download` command; None = main
    # SmolVLA only: a local directory with the VLM's config, processor and tokenizer files, replacing
    # the checkpoint's `vlm_model_name` (needed offline when that is a hub id not in the HF cache).
    vlm_model_name: str | None = None
    # Processor steps beyond LeRobot's ACT/SmolVLA ones that may load: a step's `class` (module.Name,
    # imported and called by LeRobot: its code runs here) or `registry_name`. Empty: none.
    trust_processor_classes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint whose config and processors were read; no weights loaded yet."""

    source: CheckpointSource  # what the user asked for
    directory: Path  # local folder holding the files
    config: Any  # lerobot PreTrainedConfig (ACTConfig or SmolVLAConfig), overrides applied
    features: PolicyFeatures  # what the policy consumes and produces, for the contract check
    preprocessor_overrides: dict[str, dict[str, Any]]  # LeRobot step overrides applied at load


@dataclass(frozen=True)
class LoadedPolicy:
    """A policy with its weights and LeRobot processors, ready to run on `device`."""

    checkpoint: Checkpoint
    policy: Any  # lerobot PreTrainedPolicy in eval mode
    preprocessor: Any  # PolicyProcessorPipeline: observation batch -> model inputs on `device`
    postprocessor: Any  # PolicyProcessorPipeline: model actions -> rig units on the CPU
    device: torch.device


def read_checkpoint(source: CheckpointSource | str) -> Checkpoint:
    """Read a checkpoint's config and processor files; no weights, and nothing the files name is imported.

    Raises:
        CheckpointError: a file is missing or unreadable, the policy type is not ACT or SmolVLA, a
            processor step is not allowed, the weights are pickle files, or the source is a hub id.
    """
    if isinstance(source, str):
        source = CheckpointSource(path=source)
    directory = _locate(source)
    _require_files(directory, (CONFIG_FILE, PREPROCESSOR_FILE, POSTPROCESSOR_FILE), source)
    preprocessor_spec, postprocessor_spec = _checked_processor_specs(directory, source.trust_processor_classes)
    raw = _read_json(directory / CONFIG_FILE)
    policy_type = raw.get("type") if isinstance(raw, dict) else None
    if policy_type not in SUPPORTED_TYPES:
        raise CheckpointError(
            f"{directory / CONFIG_FILE}: policy type {policy_type!r} is not supported;"
            f" so101-deploy runs {' and '.join(SUPPORTED_TYPES)} checkpoints"
        )
    config = _parse_config(directory)
    _refuse_pickle_weights(directory, "the checkpoint", has_safetensors=(directory / WEIGHTS_FILE).is_file())
    _require_files(directory, (WEIGHTS_FILE, *_state_files(preprocessor_spec, postprocessor_spec)), source)
    overrides: dict[str, dict[str, Any]] = {}
    if policy_type == "smolvla":
        vlm = _resolve_vlm(config.vlm_model_name, source.vlm_model_name, directory)
        config.vlm_model_name = vlm
        if getattr(config, "load_vlm_weights", False) and Path(vlm).is_dir():  # transformers reads the VLM's weights
            vlm_dir = Path(vlm)
            what = f"the VLM of {directory / CONFIG_FILE}, load_vlm_weights=true"
            _refuse_pickle_weights(vlm_dir, what, has_safetensors=any(vlm_dir.glob("*.safetensors")))
        if source.vlm_model_name is not None:
            overrides["tokenizer_processor"] = {"tokenizer_name": vlm}
    features = features_from_config(
        config, preprocessor_spec, _dataset_names(directory), read_joint_statistics(directory)
    )
    return Checkpoint(source, directory, config, features, overrides)


def load_policy(checkpoint: Checkpoint, device: str = "auto") -> LoadedPolicy:
    """Load the weights and LeRobot's pre/post-processors of a read checkpoint onto `device`.

    Raises:
        DeviceError: the device is not available here.
        CheckpointError: the weights or processor state cannot be read or do not fit the config, or a
            processor file changed since `read_checkpoint` to name a step that is not allowed.
    """
    from safetensors.torch import load_model

    torch_device = select_device(device)
    directory = checkpoint.directory
    config = checkpoint.config
    config.device = str(torch_device)
    if getattr(config, "pretrained_backbone_weights", None) is not None:
        # ACT would fetch torchvision's ImageNet ResNet (a pickle .pth, online) only for model.safetensors
        # to overwrite it: every backbone weight and buffer is in there, and `missing` below proves it.
        config.pretrained_backbone_weights = None
    weights = directory / WEIGHTS_FILE
    try:
        policy = build_policy(config)
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{directory / CONFIG_FILE}: the {config.type} model cannot be built: {error}") from error
    try:
        missing, unexpected = load_model(policy, str(weights), strict=False, device=str(torch_device))
    except Exception as error:  # safetensors raises its own error types for damaged files
        raise CheckpointError(
            f"{weights} cannot be loaded into the {config.type} model of {CONFIG_FILE} ({type(error).__name__}:"
            f" {str(error)[:300]}); the file is damaged or from another model: re-copy or re-download the checkpoint"
        ) from error
    if missing:
        raise CheckpointError(
            f"{weights} does not match {CONFIG_FILE}: {len(missing)} weights are missing (e.g. {sorted(missing)[:3]});"
            " the file belongs to another model or training run"
        )
    if unexpected:
        logger.warning(
            "%s holds %d weights the model does not use (e.g. %s)", weights, len(unexpected), sorted(unexpected)[:3]
        )
    policy.to(torch_device)
    policy.eval()
    overrides = {**checkpoint.preprocessor_overrides, "device_processor": {"device": str(torch_device)}}
    # Again, as late as possible: LeRobot reads the files anew, and they may have changed since read_checkpoint.
    _checked_processor_specs(directory, checkpoint.source.trust_processor_classes)
    try:
        preprocessor, postprocessor = make_processors(config, directory, overrides)
    except Exception as error:  # LeRobot raises many kinds for bad processor files
        raise CheckpointError(
            f"the processors in {directory} ({PREPROCESSOR_FILE}, {POSTPROCESSOR_FILE} and their .safetensors)"
            f" cannot be loaded: {type(error).__name__}: {error}"
        ) from error
    return LoadedPolicy(checkpoint, policy, preprocessor, postprocessor, torch_device)


def _locate(source: CheckpointSource) -> Path:
    """The local folder of the files; a hub id is refused with the command that downloads it."""
    path = Path(source.path).expanduser()
    if path.is_dir():
        if not (path / CONFIG_FILE).is_file() and (path / "pretrained_model" / CONFIG_FILE).is_file():
            logger.info("using %s", path / "pretrained_model")
            return path / "pretrained_model"
        return path
    if path.exists():
        raise CheckpointError(f"{path} is a file; pass the checkpoint directory that holds {CONFIG_FILE}")
    if not _HUB_ID.match(source.path) or source.path.startswith((".", "/", "~")):
        raise CheckpointError(f"checkpoint directory {path} does not exist; pass a directory holding {CONFIG_FILE}")
    revision = f" --revision {source.revision}" if source.revision else ""
    raise CheckpointError(
        f"{source.path!r} is not a local directory, and checkpoints load only from one (its processor files are"
        f" checked before anything runs); download it first: `hf download {source.path}{revision}"
        f" --local-dir checkpoints/{source.path.replace('/', '_')}`, then pass that directory as the policy path"
    )


def _checked_processor_specs(directory: Path, trusted: tuple[str, ...]) -> tuple[Any, Any]:
    """The pre- and post-processor JSON, each step checked against the allow-list (nothing imported)."""
    specs = []
    for name in (PREPROCESSOR_FILE, POSTPROCESSOR_FILE):
        spec = _read_json(directory / name)
        check_processor_steps(directory / name, spec, trusted)
        specs.append(spec)
    return specs[0], specs[1]


def _refuse_pickle_weights(directory: Path, what: str, *, has_safetensors: bool) -> None:
    """Refuse a folder whose weights exist only as pickle files; pickle files beside safetensors are never read."""
    pickled = sorted(path.name for path in directory.iterdir() if path.suffix in PICKLE_WEIGHT_SUFFIXES)
    if not pickled:
        return
    if has_safetensors:
        logger.info("%s: ignoring %s; weights load from .safetensors files only", directory, ", ".join(pickled))
        return
    first = directory / pickled[0]
    raise CheckpointError(
        f"{directory} ({what}) holds weights only as {', '.join(pickled)}, pickle files that can run code when read,"
        " and weights load from safetensors only; if you trust the file, convert it where it came from: python -c"
        f" \"import torch, safetensors.torch as st; st.save_file(torch.load('{first}', weights_only=True),"
        f" '{directory / WEIGHTS_FILE}')\""
    )


def _require_files(directory: Path, names: tuple[str, ...], source: CheckpointSource) -> None:
    missing = [name for name in names if not (directory / name).is_file()]
    if missing:
        raise CheckpointError(
            f"checkpoint {directory} lacks {', '.join(missing)}; a LeRobot checkpoint directory holds {CONFIG_FILE},"
            f" {WEIGHTS_FILE} and the policy_preprocessor/postprocessor files (lerobot-train writes them to"
            " checkpoints/<step>/pretrained_model)"
            + ("" if directory == Path(source.path).expanduser() else f" (from {source.path!r})")
        )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise CheckpointError(f"{path} cannot be read: {error}") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON ({error}); re-copy or re-download the checkpoint") from error


def _state_files(*specs: Any) -> list[str]:
    """The .safetensors state files the processor JSON files refer to, each a plain name in the checkpoint."""
    names = []
    for spec in specs:
        for step in spec["steps"]:  # checked to be a list of objects by check_processor_steps
            name = step.get("state_file")
            if not name:
                continue
            if not isinstance(name, str) or Path(name).name != name or not name.endswith(".safetensors"):
                raise CheckpointError(
                    f"a processor step's state_file {name!r} is not a .safetensors file name beside the processor"
                    " files; re-copy the checkpoint as lerobot-train wrote it"
                )
            names.append(name)
    return names


def _parse_config(directory: Path) -> Any:
    """The LeRobot config, parsed as LeRobot parses it (without its device fallback warning)."""
    try:
        return parse_config(directory)
    except Exception as error:  # draccus raises its own parsing errors
        raise CheckpointError(f"{directory / CONFIG_FILE} cannot be parsed: {type(error).__name__}: {error}") from error


def _resolve_vlm(saved: str, override: str | None, directory: Path) -> str:
    """The VLM config/tokenizer location SmolVLA will load, checked to be reachable from here."""
    if override is not None:
        path = Path(override).expanduser()
        missing = [name for name in (CONFIG_FILE, "tokenizer_config.json") if not (path / name).is_file()]
        if missing:
            raise CheckpointError(
                f"vlm_model_name={override!r} must be a directory holding the VLM's config, processor and tokenizer"
                f" files; it lacks {', '.join(missing)}"
            )
        return str(path.resolve())
    if Path(saved).is_dir():
        return saved
    if Path(saved).is_absolute() or not _HUB_ID.match(saved):
        raise CheckpointError(
            f"{directory / CONFIG_FILE}: vlm_model_name {saved!r} is not a directory on this machine;"
            " pass vlm_model_name=<dir> holding the VLM's config, processor and tokenizer files"
        )
    from huggingface_hub import hf_hub_download, is_offline_mode

    if is_offline_mode():
        try:
            hf_hub_download(saved, "tokenizer_config.json", local_files_only=True)
            hf_hub_download(saved, CONFIG_FILE, local_files_only=True)
        except (OSError, ValueError) as error:
            raise CheckpointError(
                f"SmolVLA needs the config and tokenizer of {saved!r} and the hub is offline with no cached copy;"
                f" keep a local copy (`hf download {saved} --local-dir <dir> --exclude '*.safetensors'`, about 4 MB)"
                " and pass vlm_model_name=<dir>"
            ) from error
    return saved


def training_dataset_root(directory: Path) -> Path | None:
    """The local copy of the dataset the checkpoint was trained on, when its train_config.json names one.

    Its `dataset.root`, else LeRobot's cache folder of its `dataset.repo_id`: the first holding a
    meta/info.json. None when there is no train_config.json or no such folder here.
    """
    path = directory / TRAIN_CONFIG_FILE
    if not path.is_file():
        return None
    try:
        dataset = json.loads(path.read_text()).get("dataset") or {}
        roots = [Path(dataset["root"])] if dataset.get("root") else []
        if isinstance(dataset.get("repo_id"), str):
            roots.append(lerobot_home() / dataset["repo_id"])
    except (OSError, ValueError, TypeError, AttributeError) as error:
        logger.warning("could not read the training dataset's place from %s: %s", path, error)
        return None
    return next((root for root in roots if (root / "meta" / "info.json").is_file()), None)


def _dataset_names(directory: Path) -> dict[str, list[str]] | None:
    """Feature names (state, action) of the training dataset, when train_config.json names a local copy."""
    root = training_dataset_root(directory)
    if root is None:
        return None
    try:
        features = json.loads((root / "meta" / "info.json").read_text())["features"]
        return {key: value.get("names") for key, value in features.items() if isinstance(value, dict)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        logger.warning("could not read the training dataset's feature names in %s: %s", root, error)
    return None
