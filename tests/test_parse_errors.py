"""A bad option value is one line that names where it came from and, for a closed set, what it takes."""

from pathlib import Path

import pytest

from policies.commands.deploy import DeployConfig
from robot.cli import UsageError, parse_command
from robot.commands.calibrate import CalibrateConfig
from robot.shell.option_names import option_names, unknown_option
from robot.shell.parse_errors import enum_choices, flag_named


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--engine.kind=fast"],
            "the command line (--engine.kind): `engine.kind`: 'fast' is not one of sync, async, rtc, ensemble, remote",
        ),
        (
            ["--rig.safety.on_exit=explode"],
            "the command line (--rig.safety.on_exit): `rig.safety.on_exit`: 'explode' is not one of hold, "
            "rest_then_release",
        ),
        (["--rig.bus.read_deadline_ms=nan"], "the command line (--rig.bus.read_deadline_ms): bus.read_deadline_ms=nan"),
    ],
)
def test_a_bad_flag_is_blamed_on_the_command_line_with_the_allowed_values(args, expected):
    with pytest.raises(UsageError) as refused:
        parse_command(DeployConfig, args)
    assert str(refused.value).startswith(expected), str(refused.value)
    assert "<class" not in str(refused.value)
    assert "KeyError" not in str(refused.value)


def test_a_bad_value_in_the_rig_file_is_blamed_on_the_file(tmp_path: Path):
    path = tmp_path / "rig.yaml"
    path.write_text("virtual: {timing: warp}\n")
    with pytest.raises(UsageError) as refused:
        parse_command(CalibrateConfig, [f"--config_path={path}", "--arms=left_follower"])
    assert str(refused.value).startswith(f"{path}: `rig.virtual.timing`: 'warp' is not one of ")


def test_enum_choices_follow_dotted_fields_through_optional_sections():
    assert enum_choices(DeployConfig, "engine.kind") == ["sync", "async", "rtc", "ensemble", "remote"]
    assert enum_choices(CalibrateConfig, "rig.virtual.timing")  # VirtualRigConfig | None
    assert enum_choices(DeployConfig, "engine") == []  # a section, not an enum
    assert enum_choices(DeployConfig, "engine.no_such_field") == []


@pytest.mark.parametrize(
    ("message", "args", "flag"),
    [
        ("`engine.kind`: 'fast' is not one of sync", ["--engine.kind=fast"], "--engine.kind"),
        (
            "bus.read_deadline_ms=nan: must be finite",
            ["--x=1", "--rig.bus.read_deadline_ms=nan"],
            "--rig.bus.read_deadline_ms",
        ),
        ("bus.read_deadline_ms=nan: must be finite", ["--rig.bus.reply_timeout_ms=5"], None),  # from the file
        ("`kind`: 'fast' is not one of", ["--engine.kind=fast"], "--engine.kind"),
        ("no rig file at x", ["--engine.kind=fast"], None),
    ],
)
def test_flag_named_finds_the_flag_that_set_the_field(message, args, flag):
    assert flag_named(message, args) == flag


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--engin.kind=sync"], "unknown option --engin.kind. Did you mean --engine.kind"),
        (
            ["--rig.bus.read_deadlin_ms=3"],
            "unknown option --rig.bus.read_deadlin_ms. Did you mean --rig.bus.read_deadline_ms",
        ),
        (["--policy.path=x", "--xyz=1"], "unknown option --xyz. (--help lists every option)"),
    ],
)
def test_an_unknown_option_is_one_line_with_the_closest_real_ones(args, expected):
    with pytest.raises(UsageError) as refused:
        parse_command(DeployConfig, args)
    assert str(refused.value).startswith(expected), str(refused.value)
    assert "\n" not in str(refused.value)  # not draccus's usage block


def test_every_option_of_a_command_is_known_and_mapping_fields_take_keys():
    names = option_names(DeployConfig)
    assert {"engine.kind", "rig.bus.read_deadline_ms", "dataset.vcodec", "session.num_episodes"} <= names
    assert unknown_option(DeployConfig, ["--engine.kind=sync", "--rig.fps=30", "--config_path=x.yaml"]) is None
    assert unknown_option(DeployConfig, ["--remote.rename_map.overhead=top"]) is None  # a mapping's keys are free
    assert unknown_option(DeployConfig, ["--engine.kind", "sync"]) is None  # the value in the next word


def test_a_negative_number_in_the_next_word_is_a_value_not_an_unknown_option():
    assert unknown_option(DeployConfig, ["--rig.virtual.seed", "-5"]) is None
    assert unknown_option(DeployConfig, ["--rig.bus.read_deadline_ms", "-2.5"]) is None
    assert unknown_option(DeployConfig, ["--rig.virtual.seed", "-x"]).startswith("unknown option --x.")
