"""Every so101-* command's `--help`: what it does, copy-paste examples, its options; and "did you mean".

The commands are read from pyproject.toml's [project.scripts], so a command added later is covered.
The shell is robot/shell/: draccus printed 250-440 lines of usage, the rig's fields in the middle of
the command's own, with no word on what the command does.
"""

import dataclasses
import importlib
import tomllib
import typing
from pathlib import Path

import pytest

from robot.shell.option_names import option_names

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
MAX_HELP_LINES = 120
RIG_COMMANDS = ["so101-sim", "so101-calibrate", "so101-release", "so101-doctor", "so101-teleop", "so101-record",
                "so101-deploy", "so101-replay"]  # fmt: skip


def _main(script: str):
    module, _, function = SCRIPTS[script].partition(":")
    return getattr(importlib.import_module(module), function)


def _help(script: str, capsys, flag: str = "--help") -> str:
    with pytest.raises(SystemExit) as done:
        _main(script)([flag])
    assert done.value.code in (0, None)
    return capsys.readouterr().out


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_says_what_the_command_does_with_examples_in_a_page(script, capsys):
    text = _help(script, capsys)
    lines = text.splitlines()
    assert lines[0].startswith(f"{script}: "), lines[0]  # the first line says what it does
    examples = [line for line in lines if line.strip().startswith(f"{script} ")]
    assert len(examples) >= 2, text
    assert len(lines) < MAX_HELP_LINES, f"{script} --help is {len(lines)} lines"
    assert "--config_path=FILE" in text
    assert "Exit" in text  # the exit codes, in the docstring or the shell's line
    assert "usage:" not in text  # not draccus's usage block


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_lists_every_option_the_command_takes_or_its_section(script, capsys):
    text = _help(script, capsys)
    config_cls = _config_class(script)
    names = option_names(config_cls)
    leaves = {n for n in names if not any(other.startswith(f"{n}.") for other in names)}
    collapsed = {line.split()[0].removeprefix("--").removesuffix(".*") for line in text.splitlines()
                 if line.strip().startswith("--") and line.split()[0].endswith(".*")}  # fmt: skip
    missing = [n for n in sorted(leaves) if f"--{n}=" not in text and not any(n.startswith(f"{c}.") for c in collapsed)]
    assert missing == [], missing


@pytest.mark.parametrize("script", RIG_COMMANDS)
def test_the_rig_fields_are_one_line_unless_asked_for(script, capsys):
    assert "--rig.bus.read_deadline_ms=25.0" not in _help(script, capsys)
    assert "--rig.*" in _help(script, capsys)
    full = _help(script, capsys, "--help=rig")
    assert "--rig.bus.read_deadline_ms=25.0" in full
    assert "--rig.safety.on_exit=rest_then_release" in full  # an enum's value, with its choices
    assert "rest_then_release|" in full or "|rest_then_release" in full


def test_a_section_built_by_its_parent_shows_the_parents_default(capsys):
    # replay builds its engine config with kind=sync; EngineConfig's own default is async.
    assert "--engine.kind=sync" in _help("so101-replay", capsys)
    assert "--engine.kind=async" in _help("so101-deploy", capsys)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_mistyped_option_is_one_line_with_did_you_mean_and_exit_2(script, capsys):
    config_cls = _config_class(script)
    real = sorted(n for n in option_names(config_cls) if "." not in n and not _is_section(config_cls, n))[0]
    assert _main(script)([f"--{real}x=1"]) == 2
    captured = capsys.readouterr()
    text = " ".join((captured.out + captured.err).split())
    assert f"unknown option --{real}x. Did you mean --{real}" in text, text
    assert "usage:" not in text


def _config_class(script: str) -> type:
    """The options dataclass the command's main parses: the one its module defines or imports for it."""
    module = importlib.import_module(SCRIPTS[script].partition(":")[0])
    known = {
        "so101-judge": "JudgeCommandConfig", "so101-review": "ReviewCommandConfig",
        "so101-report": "ReportCommandConfig", "so101-demo": "DemoConfig", "so101-policy-server": "PolicyServerConfig",
    }  # fmt: skip
    if script in known:
        return getattr(module, known[script])
    found = [v for k, v in vars(module).items() if k.endswith("Config") and dataclasses.is_dataclass(v)
             and v.__module__ == module.__name__ and "rig" in {f.name for f in dataclasses.fields(v)}]  # fmt: skip
    assert len(found) == 1, (script, found)
    return found[0]


def _is_section(config_cls: type, name: str) -> bool:
    hint = typing.get_type_hints(config_cls)[name]
    return dataclasses.is_dataclass(hint) or any(dataclasses.is_dataclass(a) for a in typing.get_args(hint))
