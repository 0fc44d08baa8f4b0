"""Each button of the studio as the command line it runs: the same command a user types, built here once.

A form posts plain fields; `command_for(action, fields, place)` checks them and returns the
`CommandLine` (argv and the text shown beside the button). Nothing here runs anything: jobs.py does.
Every action's datasets live under the studio's workspace (`<workspace>/datasets/<name>`), so the
page can find what a job wrote: its episode counter, its quality cards, its review.

    place = Place(workspace=Path("outputs/studio"), rig_file=Path("hardware_configs/so101_bimanual.yaml"))
    command_for("record", {"dataset": "fold", "episodes": "50"}, place).shown
    # so101-record --config_path=hardware_configs/so101_bimanual.yaml --dataset.repo_id=studio/fold ...
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from evaluation.errors import EvaluationError
from evaluation.studio.command_line import CommandLine
from evaluation.studio.jobs import Lane

DATASETS = "datasets"
REPO_USER = "studio"  # the LeRobot repo id of a studio dataset: studio/<name>
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
RUNTIMES = ("torch", "openvino", "onnxruntime")
SCORERS = ("heuristic", "truth", "llm")
CODECS = ("libsvtav1", "h264")


class ActionInputError(EvaluationError):
    """A field of a form is missing or not allowed (named, with what is expected)."""


@dataclass(frozen=True)
class Place:
    """Where the studio's commands act: the rig file (None: the virtual rig) and the workspace folder."""

    workspace: Path
    rig_file: Path | None = None

    def dataset(self, name: str) -> Path:
        """The folder of the workspace's dataset `name`."""
        return self.workspace / DATASETS / name

    def rig_args(self) -> tuple[str, ...]:
        """The rig file flag every rig command gets (none: the commands' default, the virtual rig)."""
        return () if self.rig_file is None else (f"--config_path={self.rig_file}",)


@dataclass(frozen=True)
class Action:
    """A button: the lane its job takes and how its command line is built from the form."""

    lane: Lane
    build: Callable[[Mapping[str, str], Place], tuple[str, ...]]


def command_for(action: str, fields: Mapping[str, str], place: Place) -> tuple[CommandLine, Lane]:
    """The command line of an action with these fields, and the lane its job runs in.

    Raises:
        ActionInputError: an unknown action, or a field that is missing or not allowed.
    """
    found = ACTIONS.get(action)
    if found is None:
        raise ActionInputError(f"no action {action!r}: expected one of {', '.join(ACTIONS)}")
    return CommandLine(found.build(fields, place)), found.lane


def dataset_name(fields: Mapping[str, str], key: str = "dataset") -> str:
    """A dataset's name: letters, digits, '_', '-' and '.', as a folder under the workspace.

    Raises:
        ActionInputError: missing, or not such a name.
    """
    name = fields.get(key, "").strip()
    if not _NAME.match(name) or name in (".", ".."):
        raise ActionInputError(f"{key}={name!r}: expected a name of letters, digits, '_', '-' or '.', e.g. fold_cloth")
    return name


def _number(fields: Mapping[str, str], key: str, default: float, low: float, high: float) -> str:
    text = str(fields.get(key, "")).strip() or f"{default:g}"
    try:
        value = float(text)
    except ValueError:
        raise ActionInputError(f"{key}={text!r}: expected a number from {low:g} to {high:g}") from None
    if not low <= value <= high:
        raise ActionInputError(f"{key}={text}: expected a number from {low:g} to {high:g}")
    return f"{value:g}"


def _count(fields: Mapping[str, str], key: str, default: int, high: int) -> str:
    value = _number(fields, key, default, 1, high)
    if float(value) != int(float(value)):
        raise ActionInputError(f"{key}={value}: expected a whole number from 1 to {high}")
    return str(int(float(value)))


def _choice(fields: Mapping[str, str], key: str, allowed: tuple[str, ...]) -> str:
    value = fields.get(key, "").strip() or allowed[0]
    if value not in allowed:
        raise ActionInputError(f"{key}={value!r}: expected one of {', '.join(allowed)}")
    return value


def _text(fields: Mapping[str, str], key: str, default: str) -> str:
    value = " ".join(str(fields.get(key, "")).split()) or default
    if len(value) > 200:
        raise ActionInputError(f"{key}: at most 200 characters")
    return value


def _more_options(fields: Mapping[str, str]) -> tuple[str, ...]:
    """The form's "more options" box: any of the command's own flags (its --help lists them), as typed.

    Raises:
        ActionInputError: not shell words, a word that is no --flag, or a flag the studio sets itself.
    """
    try:
        words = shlex.split(fields.get("more", ""))
    except ValueError as e:
        raise ActionInputError(f"more options: {e} (quote values with spaces)") from None
    for word in words:
        if not word.startswith("--") or "=" not in word:
            raise ActionInputError(f"more options: {word!r} is not a --flag=value, e.g. --gates.min_fps=20")
        if word.split("=", 1)[0] in ("--config_path", "--dataset.root", "--dataset.repo_id"):
            raise ActionInputError(f"more options: {word.split('=', 1)[0]} is the studio's to set (rig and workspace)")
    return tuple(words)


def _existing_dataset(fields: Mapping[str, str], place: Place) -> Path:
    name = dataset_name(fields)
    folder = place.dataset(name)
    if not (folder / "meta" / "info.json").is_file():
        raise ActionInputError(f"dataset {name!r}: no dataset at {folder}. Next: record it in the Record panel")
    return folder


def _writing(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    """The dataset flags of a command that records: a new dataset, or episodes added to this one."""
    name = dataset_name(fields)
    folder = place.dataset(name)
    resume = ("--dataset.resume=true",) if (folder / "meta" / "info.json").is_file() else ()
    codec = _choice(fields, "vcodec", CODECS)
    return (f"--dataset.repo_id={REPO_USER}/{name}", f"--dataset.root={folder}", f"--dataset.vcodec={codec}", *resume)


def _session(fields: Mapping[str, str], episodes: int, episode_s: float, reset_s: float) -> tuple[str, ...]:
    return (
        f"--session.num_episodes={_count(fields, 'episodes', episodes, 1000)}",
        f"--session.episode_s={_number(fields, 'episode_s', episode_s, 1, 3600)}",
        f"--session.reset_s={_number(fields, 'reset_s', reset_s, 0, 600)}",
    )


def _doctor(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    return ("so101-doctor", *place.rig_args(), "--json=true")


def _calibrate(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    return ("so101-calibrate", *place.rig_args())


def _teleop(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    return ("so101-teleop", *place.rig_args(), "--view.enabled=true", "--view.port=0")


def _record(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    return (
        "so101-record",
        *place.rig_args(),
        *_writing(fields, place),
        f"--session.task={_text(fields, 'task', 'Fold the cloth')}",
        *_session(fields, 50, 30.0, 10.0),
        "--view.enabled=true",
        "--view.port=0",
        *_more_options(fields),
    )


def _replay(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    folder = _existing_dataset(fields, place)
    episode = _number(fields, "episode", 0, 0, 1_000_000)
    report = place.workspace / "replays" / f"{folder.name}-episode{episode}"
    return (
        "so101-replay",
        f"--dataset.root={folder}",
        f"--dataset.episodes={episode}",
        "--target=dry",
        f"--report.output_dir={report}",
    )


def _deploy(fields: Mapping[str, str], place: Place) -> tuple[str, ...]:
    checkpoint = fields.get("checkpoint", "").strip()
    if not checkpoint:
        raise ActionInputError("checkpoint: give the folder of a trained policy (lerobot-train's pretrained_model)")
    if not Path(checkpoint).expanduser().is_dir():
        raise ActionInputError(f"checkpoint={checkpoint}: no such folder. Next: give a pretrained_model folder")
    operator = _text(fields, "operator", "studio")
    return (
        "so101-deploy",
        *place.rig_args(),
        f"--policy.path={Path(checkpoint).expanduser()}",
        f"--policy.runtime={_choice(fields, 'runtime', RUNTIMES)}",
        *_writing(fields, place),
        *_session(fields, 10, 30.0, 10.0),
        "--correction.enabled=true",
        "--live_scores.enabled=true",
        f"--live_scores.operator={operator}",
        *_more_options(fields),
    )


def _judge(fields: Mapping[str, str], place: Place, *, dry_run: bool) -> tuple[str, ...]:
    folder = _existing_dataset(fields, place)
    if dry_run:
        sheets = place.workspace / "judge_dry_run" / folder.name
        return ("so101-judge", f"--dataset.root={folder}", "--dry_run=true", f"--dry.output_dir={sheets}")
    return ("so101-judge", f"--dataset.root={folder}", f"--scorer={_choice(fields, 'scorer', SCORERS)}")


ACTIONS: dict[str, Action] = {
    "doctor": Action(Lane.RIG, _doctor),
    "calibrate": Action(Lane.RIG, _calibrate),
    "teleop": Action(Lane.RIG, _teleop),
    "record": Action(Lane.RIG, _record),
    "deploy": Action(Lane.RIG, _deploy),
    "replay": Action(Lane.OFFLINE, _replay),  # dry arms: no bus, the rig stays free
    "judge_estimate": Action(Lane.OFFLINE, lambda f, p: _judge(f, p, dry_run=True)),
    "judge": Action(Lane.OFFLINE, lambda f, p: _judge(f, p, dry_run=False)),
}
