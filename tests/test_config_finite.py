"""Every float field of every config dataclass refuses NaN and +/-inf, and the error names the field.

NaN compares false, so range checks (`if x < 0: raise`) let it through: `bus.read_deadline_ms: .nan`
would never expire, `bus.status_poll_period_s: .nan` would turn the thermal watchdog off. Each config
calls `reject_non_finite` (robot/config_checks.py; evaluation/config_checks.py for evaluation) first
thing in `__post_init__`.

The configs are discovered, not listed: every module of robot/, teleop/, policies/ and evaluation/ is
imported, every frozen dataclass whose name ends in "Config" is taken, and so is every dataclass
reachable through their fields (QualityGates, Thresholds, RetryPolicy, PolicyOptions, ...). Every
float, `float | None` or tuple-of-float field of each (per typing.get_type_hints) is set to nan, inf
and -inf in turn. A config added later is covered without touching this file, and one with a float
field that lacks the check fails here: the error must say "finite", so a range check that happens to
catch NaN does not count. The error must also name the field as users type it: a config reached as
field `gates` of a command must say `gates.<field>=`.
"""

import dataclasses
import importlib
import inspect
import math
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluation.commands.judge import main as judge_main
from evaluation.errors import ConfigError as EvaluationConfigError
from policies.engines.remote import RemoteEngineConfig
from robot.cameras.config import CaptureConfig, OpenCVCameraConfig, VirtualCameraConfig
from robot.cameras.errors import CameraConfigError
from robot.cli import parse_command
from robot.config import DEFAULT_RIG_FILE, RigConfig
from robot.errors import ConfigError
from robot.shell.errors import UsageError
from robot.shell.exit_codes import Exit
from robot.virtual.config import VirtualRigConfig

PACKAGES = ("robot", "teleop", "policies", "evaluation")
BAD_VALUES = (math.nan, math.inf, -math.inf)
# What each layer raises for a config value.
CONFIG_ERRORS: tuple[type[BaseException], ...] = (ConfigError, CameraConfigError, EvaluationConfigError)

# The few configs that cannot be built from defaults alone: their required fields.
REQUIRED_KWARGS: dict[type, dict[str, Any]] = {
    OpenCVCameraConfig: {"name": "cam", "device": "0"},
    VirtualCameraConfig: {"name": "cam"},
    RemoteEngineConfig: {"checkpoint": "/srv/checkpoints/act"},
}
# A rig field's default (RigConfig()) names virtual ports without a `virtual:` section, which is refused;
# any config with a rig gets this valid virtual one instead.
VALID_RIG = RigConfig(virtual=VirtualRigConfig())
# Configs validated by their owner rather than on construction: how to hand one to its owner.
# CaptureConfig is checked by its camera, so that the error names the camera.
CHECKED_BY_OWNER: dict[type, Callable[[Any], object]] = {
    CaptureConfig: lambda capture: VirtualCameraConfig(name="cam", capture=capture),
}


@dataclasses.dataclass(frozen=True)
class FloatField:
    """One float field of one config, and the section name its error must carry."""

    cls: type
    name: str
    section: str  # the field name the config is reached under ("" for a command's own options)
    collection: bool  # the field holds a tuple of floats, not one float

    def __str__(self) -> str:
        where = f"{self.section}." if self.section else ""
        return f"{self.cls.__module__}.{self.cls.__qualname__}:{where}{self.name}"


def _walk_modules() -> tuple[list[type], list[str]]:
    """Every dataclass defined in the packages, and the modules that failed to import."""
    classes: list[type] = []
    failures: list[str] = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            try:
                module = importlib.import_module(info.name)
            except Exception as e:  # reported by test_every_module_imports, not hidden
                failures.append(f"{info.name}: {type(e).__name__}: {e}")
                continue
            for obj in vars(module).values():
                if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__:
                    classes.append(obj)
    return classes, failures


def _dataclasses_in(hint: Any) -> Iterator[tuple[type, bool]]:
    """The dataclasses a field's type names, each with whether it sits inside a collection."""
    if inspect.isclass(hint) and dataclasses.is_dataclass(hint):
        yield hint, False
        return
    origin = typing.get_origin(hint)
    for arg in typing.get_args(hint):
        for cls, in_collection in _dataclasses_in(arg):
            yield cls, in_collection or origin not in (typing.Union, types.UnionType)


def _float_kind(hint: Any) -> str | None:
    """Whether a field holds floats: "one" (float, float | None), "tuple" (tuple[float, ...]) or None."""
    if hint is float or (typing.get_origin(hint) in (typing.Union, types.UnionType) and float in typing.get_args(hint)):
        return "one"
    if typing.get_origin(hint) is tuple and float in typing.get_args(hint):
        return "tuple"
    return None


def _discover() -> tuple[list[FloatField], set[type], list[str]]:
    classes, failures = _walk_modules()
    roots = [c for c in classes if c.__name__.endswith("Config") and c.__dataclass_params__.frozen]  # type: ignore[attr-defined]
    sections: dict[type, set[str]] = {c: set() for c in roots}
    resolved: dict[type, dict[str, Any]] = {}
    pending = list(roots)
    while pending:
        cls = pending.pop()
        try:
            hints = typing.get_type_hints(cls)
        except Exception as e:
            failures.append(f"{cls.__qualname__}: type hints do not resolve: {e}")
            continue
        resolved[cls] = hints
        for f in dataclasses.fields(cls):
            for child, in_collection in _dataclasses_in(hints[f.name]):
                if child not in sections:
                    sections[child] = set()
                    pending.append(child)
                # A camera in `cameras: [...]` is named by its own name, not by the list's.
                if not in_collection:
                    sections[child].add(f.name)
    found: list[FloatField] = []
    for cls, hints in resolved.items():
        for f in dataclasses.fields(cls):
            kind = _float_kind(hints[f.name])
            if kind is not None:
                for section in sorted(sections[cls]) or [""]:
                    found.append(FloatField(cls, f.name, section, kind == "tuple"))
    return found, set(sections), failures


FLOAT_FIELDS, CONFIG_CLASSES, DISCOVERY_FAILURES = _discover()


def build(cls: type, **overrides: Any) -> object:
    """The config from its defaults, a valid rig and REQUIRED_KWARGS, with `overrides` on top."""
    hints = typing.get_type_hints(cls)
    kwargs = {f.name: VALID_RIG for f in dataclasses.fields(cls) if hints[f.name] is RigConfig}
    return cls(**(kwargs | REQUIRED_KWARGS.get(cls, {}) | overrides))


def construct(cls: type, **overrides: Any) -> None:
    """`build`, then hand the config to its owner where the owner is what validates it."""
    config = build(cls, **overrides)
    if cls in CHECKED_BY_OWNER:
        CHECKED_BY_OWNER[cls](config)


def test_every_module_imports():
    """A module that does not import hides its configs from discovery."""
    assert DISCOVERY_FAILURES == []


def test_discovery_finds_the_known_configs():
    names = {cls.__name__ for cls in CONFIG_CLASSES}
    known = {
        "BusConfig",
        "SafetyConfig",
        "SyncConfig",
        "VirtualRigConfig",
        "QualityGates",
        "GestureConfig",
        "SessionConfig",
        "TeleopConfig",
        "EngineConfig",
        "RemoteEngineConfig",
        "Thresholds",
        "JudgeModelConfig",
        "RetryPolicy",
        "AuditConfig",
    }
    assert known <= names
    assert len(FLOAT_FIELDS) >= 80


@pytest.mark.parametrize("cls", sorted({f.cls for f in FLOAT_FIELDS}, key=str), ids=lambda c: c.__qualname__)
def test_every_config_with_floats_builds_from_defaults(cls):
    """So that a failure below is the bad value's, not a missing argument's (else extend REQUIRED_KWARGS)."""
    build(cls)


@pytest.mark.parametrize("bad", BAD_VALUES, ids=str)
@pytest.mark.parametrize("field", FLOAT_FIELDS, ids=str)
def test_non_finite_values_are_refused_naming_the_field(field: FloatField, bad: float):
    value: object = (bad,) if field.collection else bad
    expected = CONFIG_ERRORS
    name = f"{field.name}[0]" if field.collection else field.name
    qualified = f"{field.section}.{name}=" if field.section else f"{name}="
    with pytest.raises(expected) as raised:
        construct(field.cls, **{field.name: value})
    message = str(raised.value)
    assert qualified in message, message
    assert "finite" in message, message


def test_finite_values_still_pass():
    """The check looks at values, not types: ints, None and finite floats are untouched."""
    build(VirtualCameraConfig, fps=30, freeze_after_s=None, disconnect_after_s=2.5)


def _rig_file(tmp_path: Path, **sections: dict[str, float]) -> Path:
    rig = yaml.safe_load(DEFAULT_RIG_FILE.read_text())
    for section, values in sections.items():
        rig[section] = rig.get(section, {}) | values
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path


@pytest.mark.parametrize(
    ("section", "field", "bad", "in_yaml", "message"),
    [
        ("bus", "read_deadline_ms", math.nan, "read_deadline_ms: .nan", r"bus\.read_deadline_ms=nan: must be a finite"),
        ("bus", "status_poll_period_s", math.nan, "status_poll_period_s: .nan", r"bus\.status_poll_period_s=nan"),
        ("safety", "max_velocity_deg_s", math.inf, "max_velocity_deg_s: .inf", r"safety\.max_velocity_deg_s=inf"),
    ],
)
def test_a_rig_file_with_a_non_finite_value_is_refused(tmp_path, section, field, bad, in_yaml, message):
    from teleop.commands.teleop import TeleopConfig

    path = _rig_file(tmp_path, **{section: {field: bad}})
    assert in_yaml in path.read_text()  # what a person would have written
    with pytest.raises(UsageError, match=message):
        parse_command(TeleopConfig, [f"--config_path={path}"])


def test_a_non_finite_flag_is_refused(tmp_path):
    from teleop.commands.record import RecordConfig

    with pytest.raises(UsageError, match=r"session\.episode_s=inf: must be a finite"):
        parse_command(RecordConfig, [f"--config_path={DEFAULT_RIG_FILE}", "--session.episode_s=inf"])


def test_the_judge_refuses_a_non_finite_flag(tmp_path, capsys):
    code = judge_main([f"--dataset.root={tmp_path}", "--judge.retry.max_backoff_s=nan"])
    assert code == Exit.USAGE
    assert "judge.retry.max_backoff_s=nan: must be a finite number" in capsys.readouterr().err
