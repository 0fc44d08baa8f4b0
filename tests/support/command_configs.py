"""Every so101-* command, read from pyproject.toml's [project.scripts], and the options class it parses.

SCRIPTS["so101-record"]             # "teleop.commands.record:main"
command_main("so101-record")        # that function
config_class("so101-record")        # RecordConfig, whose fields are the command's options
file_flag("so101-judge")            # "--options_path": the flag that names the command's file
"""

import dataclasses
import importlib
import tomllib
from collections.abc import Callable
from pathlib import Path

from robot.shell.rig_flag import RIG_COMMANDS

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
# The commands whose options class is not found by the rule below (it holds no `rig` field).
_NAMED = {
    "so101-judge": "JudgeCommandConfig",
    "so101-review": "ReviewCommandConfig",
    "so101-report": "ReportCommandConfig",
    "so101-campaign": "CampaignCommandConfig",
    "so101-demo": "DemoConfig",
    "so101-policy-server": "PolicyServerConfig",
    "so101-edit": "EditConfig",
    "so101-fit": "FitCommandConfig",  # defined in robot/virtual/twin/options.py, beside its run
    "so101-studio": "StudioConfig",  # its --config_path is the rig file it hands to every rig command
}


def command_main(script: str) -> Callable[..., object]:
    """The function the console script `script` runs."""
    module, _, function = SCRIPTS[script].partition(":")
    return getattr(importlib.import_module(module), function)


def config_class(script: str) -> type:
    """The options dataclass the command's main parses: the one its module defines or imports for it."""
    module = importlib.import_module(SCRIPTS[script].partition(":")[0])
    if script in _NAMED:
        return getattr(module, _NAMED[script])
    found = [
        v
        for k, v in vars(module).items()
        if k.endswith("Config")
        and dataclasses.is_dataclass(v)
        and v.__module__ == module.__name__
        and "rig" in {f.name for f in dataclasses.fields(v)}
    ]
    assert len(found) == 1, (script, found)
    return found[0]


def file_flag(script: str) -> str:
    """The flag that names the command's file: the rig file (`--config_path`), or its options file."""
    return "--config_path" if script.removeprefix("so101-") in RIG_COMMANDS else "--options_path"
