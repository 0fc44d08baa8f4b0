"""The rig file in every next step: a printed so101-* command repeats the --config_path it was given.

A refusal deep in the stack ("Next: so101-calibrate --arms=left_follower") is written by code that
knows an arm, not the rig file it came from. Pasted as printed, that line would act on the default
rig, the virtual one, and not on the person's arms. So the command's error line, once, gets the
person's own `--config_path` added to every rig command it names that does not carry one.
"""

import re
import shlex
from collections.abc import Sequence

# The commands that read a rig file (docs/command-line.md: `--config_path`).
RIG_COMMANDS = (
    "sim",
    "fit",
    "ports",
    "setup",
    "cameras",
    "udev",
    "calibrate",
    "release",
    "doctor",
    "teleop",
    "record",
    "deploy",
    "replay",
    "studio",  # the rig file it passes on to the rig commands it runs
)
_COMMAND = re.compile(r"\bso101-(" + "|".join(RIG_COMMANDS) + r")\b(?!-)")


def config_path_of(args: Sequence[str]) -> str | None:
    """The `--config_path` among a command's arguments (the last one wins, as when parsed), if any."""
    found = None
    for i, arg in enumerate(args):
        if arg.startswith("--config_path="):
            found = arg.partition("=")[2]
        elif arg == "--config_path" and i + 1 < len(args):
            found = args[i + 1]
    return found or None


def with_config_path(text: str, config_path: str | None) -> str:
    """`text` with `--config_path=<config_path>` after each rig command that names no rig file of its own."""
    if not config_path:
        return text
    flag = f" --config_path={shlex.quote(config_path)}"
    out, last = [], 0
    matches = list(_COMMAND.finditer(text))
    for k, match in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        own = text[match.end() : end].split("\n", 1)[0]
        out.append(text[last : match.end()])
        if "--config_path" not in own:
            out.append(flag)
        last = match.end()
    out.append(text[last:])
    return "".join(out)
