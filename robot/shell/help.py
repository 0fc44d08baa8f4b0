"""`--help` for every `so101-*` command: what it does, examples, then its options by section.

draccus prints a usage block of every flag, the rig's ~45 fields among them, and never the module
docstring that says what the command does: 250-440 lines, the command's own options lost between
`--rig.virtual.seed` and `--rig.sync.stats_window`. Here `--help` opens with the command's module
docstring (its first line says what it does, then copy-paste examples), lists the command's own
options one per line with its default (or type) and the comment written beside the field, and collapses
big shared sections (the rig file's fields) into one `--rig.*` line; `--help=rig` lists those too.

    so101-record --help          # the command, its examples and its own options
    so101-record --help=rig      # ... and every rig field (hardware_configs/README.md explains them)
"""

import dataclasses
import enum
import inspect
import sys
import textwrap
import types
import typing
from collections.abc import Mapping
from pathlib import Path

from draccus.wrappers.docstring import get_attribute_docstring, get_preferred_help_text

WIDTH = 110  # characters of a help line
NAME_COLUMN = 40  # where an option's description starts


def help_requested(args: list[str]) -> str | None:
    """The help topic asked for: "" for `--help` or `-h`, "rig" for `--help=rig`; None when none was."""
    for arg in args:
        if arg in ("-h", "--help"):
            return ""
        if arg.startswith("--help="):
            return arg.split("=", 1)[1]
    return None


def command_help(
    config_cls: type,
    *,
    config_file: str,
    file_flag: str = "--config_path",
    doc: str | None = None,
    exit_status: str = "",
    collapsed: Mapping[str, str] = {},
    topic: str = "",
) -> str:
    """The help text of the command whose options are `config_cls`.

    `config_file`: what the file `file_flag` names holds (the rig, or the command's options); `doc`:
    the command's module docstring (default: that of the module defining `config_cls`); `exit_status`:
    the exit codes, when the docstring does not give them; `collapsed`: sections shown as one
    `--name.*` line with this text, unless `topic` names them.
    """
    doc = inspect.cleandoc(doc or sys.modules[config_cls.__module__].__doc__ or config_cls.__doc__ or "")
    lines = [doc.replace("\\\n", "\n"), "", f"Options (each with its default; flags override the {file_flag} file):"]
    lines.append(_row(f"{file_flag}=FILE", config_file))
    shown = {name: text for name, text in collapsed.items() if name != topic}
    lines += _section_rows(config_cls, "", None, shown)
    lines += ["", *textwrap.wrap(exit_status, WIDTH)] if exit_status else []
    return "\n".join(lines) + "\n"


def _section_rows(cls: type, prefix: str, defaults: object | None, collapsed: Mapping[str, str]) -> list[str]:
    """One row per leaf option of `cls`, nested sections after the plain options, each under its name.

    `defaults`: the section as its parent builds it by default, when it can be built, else None (then
    each field's own default is shown): replay's `engine.kind` defaults to sync, EngineConfig's to async.
    """
    hints = typing.get_type_hints(cls)
    plain: list[str] = []
    sections: list[str] = []
    for f in dataclasses.fields(cls):
        name = f"{prefix}{f.name}"
        inner = _dataclass_of(hints[f.name])
        if inner is None:
            default = _default(f) if defaults is None else getattr(defaults, f.name)
            plain.append(_option_row(cls, f.name, name, hints[f.name], default))
        elif name in collapsed:
            sections += ["", _row(f"--{name}.*", f"{collapsed[name]} (all of them: --help={name})")]
        else:
            title = _first_line(inner.__doc__ or "")
            sections += ["", f"{name}: {title}" if title else f"{name}:"]
            built = _built_default(f) if defaults is None else getattr(defaults, f.name)
            sections += _section_rows(inner, f"{name}.", built, collapsed)
    return plain + sections


def _row(left: str, text: str) -> str:
    """`  --name TYPE  text`, the text from NAME_COLUMN on (or just after a longer name), wrapped under it."""
    start = f"  {left}".ljust(NAME_COLUMN) if len(left) + 4 <= NAME_COLUMN else f"  {left}  "
    if not text.strip():  # a field commented with the one above it (textwrap would drop the row)
        return start.rstrip()
    return textwrap.fill(
        text,
        WIDTH,
        initial_indent=start,
        subsequent_indent=" " * NAME_COLUMN,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _option_row(cls: type, field_name: str, name: str, hint: object, default: object) -> str:
    """`--name=DEFAULT  comment (one of a|b)`: the default is the value shown, its type where there is none."""
    comment = " ".join((get_preferred_help_text(get_attribute_docstring(cls, field_name)) or "").split())
    shown = _shown_default(default)
    if default is dataclasses.MISSING:
        comment = f"{comment} (required)".strip()
    choices = _choices(hint)
    if choices and not all(choice in comment for choice in choices):
        comment = f"{comment} (one of {'|'.join(choices)})".strip()
    return _row(f"--{name}={shown if shown else _metavar(hint)}", comment)


def _shown_default(value: object) -> str:
    """The default as it would be typed, or "" when there is none to show (None, "", [], required)."""
    if value is dataclasses.MISSING or value is None or value == "" or value == () or value == []:
        return ""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(_shown_default(v) for v in value) + "]"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"'{text}'" if " " in text else text


def _choices(hint: object) -> list[str]:
    """The valid values of an enum or Literal field (also inside `X | None`), else []."""
    for candidate in (hint, *typing.get_args(hint)):
        if typing.get_origin(candidate) is typing.Literal:
            return [str(a) for a in typing.get_args(candidate)]
        if isinstance(candidate, type) and issubclass(candidate, enum.Enum):
            return [str(member.value) for member in candidate]
    return []


def _built_default(f: dataclasses.Field) -> object | None:
    """A section field's default instance, or None when it cannot be built alone (RigConfig() is invalid)."""
    try:
        value = _default(f)
    except Exception:  # a section valid only with the rest of the file: show its fields' own defaults
        return None
    return None if value is dataclasses.MISSING else value


def _default(f: dataclasses.Field) -> object:
    """A field's default (MISSING when required)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _metavar(hint: object) -> str:
    """How a value of this type is written: INT, FLOAT, PATH, BOOL, TEXT, a|b|c for an enum, LIST."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return "|".join(dict.fromkeys(_metavar(a) for a in args))
    origin = typing.get_origin(hint)
    if origin in (list, tuple, set, frozenset):
        return "LIST"
    if origin is dict:
        return "MAP"
    if _choices(hint):
        return "|".join(_choices(hint))
    names = {bool: "BOOL", int: "INT", float: "FLOAT", str: "TEXT", Path: "PATH"}
    return names.get(hint, getattr(hint, "__name__", str(hint)).upper()) if isinstance(hint, type) else "VALUE"


def _dataclass_of(hint: object) -> type | None:
    """The dataclass a field holds (itself, or the one in `X | None`), or None for a plain value."""
    candidates = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    found = [c for c in candidates if isinstance(c, type) and dataclasses.is_dataclass(c)]
    return found[0] if len(found) == 1 else None


def _first_line(doc: str) -> str:
    return inspect.cleandoc(doc).split("\n", 1)[0].strip() if doc.strip() else ""
