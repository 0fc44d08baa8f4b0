r"""Whether a printed next step parses with its command's own parser, placeholders filled in.

    why_not(NextCommand("so101-judge", ("--dataset.root=<folder>",)))   # None: it parses

Placeholders: `<folder>` (any `<...>`) and a value of `...` become a value of the option's type (a
word, 1, true, the enum's first value); `$HOME`-style variables are expanded (unset: a placeholder).
`...` as a word or a list item, or a value the user fills in, means the user adds options: the
command may then leave out options its parser requires, but each one it gives must be known and
parse. A failure that names only options whose values are placeholders is the user's to fill in.
`--config_path` of a rig command reads the printed file if it is a valid rig file (relative: to the
checkout too), else the virtual rig; an options file (`--options_path`: judge, review, report, ...)
is read as empty, and may hold the required options the command leaves out: the check is of the
command line. A spelling the command accepts only for this release (robot/shell/old_spellings.py)
is a finding: a next step teaches the new one.

The parser is the command's own: `parse_command` with its options class for the rig commands, the
shell's `parse_options` otherwise; lerobot-train's options are checked by name.
"""

import contextlib
import dataclasses
import enum
import importlib
import io
import logging
import os
import re
import tempfile
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.command_configs import ROOT, SCRIPTS, config_class, file_flag

if TYPE_CHECKING:
    from tests.support.next_steps import NextCommand

PLACEHOLDER = re.compile(r"<[^<>\n]*>")  # `<folder>`: the user's value
ELISION = "..."  # as a word or a value: what the user adds
VARIABLE = re.compile(r"\$\{?\w+\}?")
ELIDED_ITEM = re.compile(r",\s*\.\.\.(?=\])")  # `[<dataset>,...]`: more items of the user's
RIG_FILE = ROOT / "hardware_configs" / "virtual.yaml"


def why_not(command: "NextCommand") -> str | None:
    """None if `command` parses with its command's own parser, else why not (one line)."""
    if command.script == "lerobot-train":
        return _train_options(command.args)
    if command.script not in SCRIPTS:
        return f"no such command: pyproject.toml's [project.scripts] has {', '.join(sorted(SCRIPTS))}"
    try:
        module = importlib.import_module(SCRIPTS[command.script].partition(":")[0])
        options = config_class(command.script)
    except Exception as e:  # a command that cannot even be loaded is the finding
        return f"its command cannot be loaded: {type(e).__name__}: {e}"
    # A rig file: the options hold the rig, or (so101-studio) the command passes its --config_path on.
    has_rig = "rig" in {f.name for f in dataclasses.fields(options)} or file_flag(command.script) == "--config_path"
    from robot.shell.old_spellings import OPTIONS_FILE

    old = {**getattr(module, "OLD_SPELLINGS", {}), **({} if has_rig else OPTIONS_FILE)}
    if spelled := [a.split("=", 1)[0] for a in command.args if a.split("=", 1)[0] in old]:
        return f"{spelled[0]} is the old spelling of {old[spelled[0]]} (robot/shell/old_spellings.py)"
    printed = command.args
    if command.added:  # prose names other tools' flags too (`--repo-type`), and options without a value
        printed = tuple(a for a in printed if "-" not in _name(a))
        from robot.shell.option_names import unknown_option

        if unknown := unknown_option(options, list(printed)):
            return unknown
        printed = tuple(a for a in printed if "=" in a)
    with _options_file() as empty:
        args = [_concrete(options, arg, _rig_file if has_rig else lambda _: empty) for arg in printed]
        why = _parse(module, options, command.script, args)
    if why is None or why.startswith("unknown option"):
        return why
    given = {_name(arg): arg != stood for arg, stood in zip(printed, args, strict=True)}  # name: placeholder?
    named = {placeholder for name, placeholder in given.items() if _names(why, name)}
    if named:  # a value the command gave fails (a genuine finding), or one the user fills in does (not)
        return why if False in named else None
    from_file = not has_rig and "options_path" in given  # an options file may hold what the command leaves out
    return None if command.elided or from_file else why  # else a required option is missing


def _train_options(args: tuple[str, ...]) -> str | None:
    """lerobot-train's options checked by name (its policy and env sections take the chosen type's fields)."""
    from lerobot.configs.train import TrainPipelineConfig

    from robot.shell.option_names import unknown_option

    checked = [a for a in args if not a.lstrip("-").startswith(("policy.", "env."))]
    return unknown_option(TrainPipelineConfig, checked)


def _name(arg: str) -> str:
    return arg.lstrip("-").split("=", 1)[0]


def _names(message: str, option: str) -> bool:
    """Whether `message` names `option` (`dataset.root`, with or without its dashes)."""
    return re.search(rf"(?<![\w.]){re.escape(option)}(?!\w)", message) is not None


def _parse(module: types.ModuleType, options: type, script: str, args: list[str]) -> str | None:
    """Run the command's own parse step on `args`; None if it accepts them, else its message."""
    from robot.shell.parse import parse_options

    out, err = io.StringIO(), io.StringIO()
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if "parse_command" in vars(module):
                module.parse_command(options, args)
            else:
                parse_options(options, args, doc=module.__doc__ or "", example=script)
    except SystemExit as e:  # argparse's exit on a bad command line; `--help` exits 0
        if e.code not in (0, None):
            return f"exit {e.code}: {_one_line(err.getvalue() or out.getvalue())}"
    except Exception as e:  # whatever the parser raises is what the user would see
        return _one_line(str(_root_cause(e)) or type(e).__name__)
    finally:
        logging.disable(previous)
    return None


def _root_cause(error: BaseException) -> BaseException:
    """Our own error (a CommandError, which draccus wraps) if one is in the chain."""
    from robot.shell.errors import CommandError

    current: BaseException | None = error
    while current is not None:
        if isinstance(current, CommandError):
            return current
        current = current.__cause__
    return error


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


@contextlib.contextmanager
def _options_file():
    with tempfile.TemporaryDirectory(prefix="next-steps-") as folder:
        path = Path(folder) / "options.yaml"
        path.write_text("{}\n")
        yield path


def _rig_file(printed: str) -> Path:
    """The printed rig file if it is one (relative: to here, or to the checkout), else the virtual rig."""
    import robot.cli
    from robot.config import RigConfig

    @dataclasses.dataclass(frozen=True)
    class RigOnly:
        rig: RigConfig = dataclasses.field(default_factory=RigConfig)

    for path in (Path(printed).expanduser(), ROOT / printed):
        if path.is_file():
            try:
                robot.cli.parse_command(RigOnly, [f"--config_path={path}"])
            except Exception:  # a broken rig file is the user's to fix, not the command line's
                continue
            return path
    return RIG_FILE


def _concrete(options: type, arg: str, config_file: Callable[[str], Path]) -> str:
    """`arg` with its placeholders replaced by a value of its option's type (see the module docstring)."""
    if "=" not in arg:
        return arg
    flag, value = arg.split("=", 1)
    name = flag.lstrip("-")
    if name in ("config_path", "options_path"):
        return f"{flag}={config_file(value)}"
    stand_in = _stand_in(_field_type(options, name))
    value = ELIDED_ITEM.sub("", value)
    value = stand_in if value == ELISION else PLACEHOLDER.sub(stand_in, value)
    value = VARIABLE.sub(stand_in, os.path.expandvars(value))
    return f"{flag}={value}"


def _field_type(options: type, dotted: str) -> object:
    """The type of the field at `dotted` (`dataset.root`), its optional and sequence wrappers removed."""
    current: object = options
    for part in dotted.split("."):
        classes = [c for c in _members(current) if dataclasses.is_dataclass(c)]
        if not classes or part not in {f.name for f in dataclasses.fields(classes[0])}:
            return str
        current = typing.get_type_hints(classes[0])[part]
    members = _members(current)
    return members[0] if members else str


def _members(hint: object) -> list[object]:
    """The types a hint stands for: `X | None` -> [X]; `tuple[X, ...]` -> [X]; X -> [X]."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return [m for a in typing.get_args(hint) if a is not type(None) for m in _members(a)]
    if typing.get_origin(hint) in (tuple, list, set, frozenset):
        return [m for a in typing.get_args(hint) if a is not Ellipsis for m in _members(a)][:1]
    return [hint]


def _stand_in(hint: object) -> str:
    """A value of type `hint` for a placeholder."""
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return str(next(iter(hint)).value)
    if hint is bool:
        return "true"
    if hint in (int, float):
        return "1"
    return "placeholder"
