"""Every option a command takes, and "did you mean" for one it does not.

draccus answers a mistyped flag with its whole usage block (60-400 lines of every rig field) and
"unrecognized arguments" at the bottom. A command's options are its config dataclass's fields,
dotted through the nested sections (`--rig.bus.read_deadline_ms`, `--engine.kind`), so a typo can
be checked before draccus sees it, and answered with the closest real option.
"""

import dataclasses
import difflib
import types
import typing

ALWAYS = frozenset({"config_path", "help", "h"})  # draccus's own flags


def option_names(config_cls: type) -> frozenset[str]:
    """The dotted names of every field of `config_cls`, sections included (`rig`, `rig.bus`, `rig.bus.x`)."""
    names: set[str] = set()

    def walk(cls: type, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            name = f"{prefix}{f.name}"
            names.add(name)
            for section in _dataclasses_in(typing.get_type_hints(cls)[f.name]):
                walk(section, f"{name}.")

    walk(config_cls, "")
    return frozenset(names)


def unknown_option(config_cls: type, args: list[str]) -> str | None:
    """A one-line refusal of the first flag `config_cls` has no field for, with the closest; None if all are known.

    A flag below a field that holds a mapping (`--remote.rename_map.a=b`) counts as known.
    """
    known = option_names(config_cls) | ALWAYS
    for arg in args:
        if not arg.startswith("-") or _is_number(arg):  # `--rig.virtual.seed -5`: a value, not a flag
            continue
        name = arg.lstrip("-").split("=", 1)[0]
        if name in known or any(name.startswith(f"{k}.") and k not in _sections(known) for k in known):
            continue
        leaves = known - ALWAYS - _sections(known)  # suggest options that take a value, not sections
        close = difflib.get_close_matches(name, sorted(leaves), n=2, cutoff=0.6)
        hint = f" Did you mean {' or '.join(f'--{c}' for c in close)}?" if close else ""
        return f"unknown option --{name}.{hint} (--help lists every option)"
    return None


def _is_number(arg: str) -> bool:
    try:
        float(arg)
    except ValueError:
        return False
    return True


def _sections(known: frozenset[str]) -> set[str]:
    """The names that have dotted children: sections, whose unknown children are typos."""
    return {name.rsplit(".", 1)[0] for name in known if "." in name}


def _dataclasses_in(hint: object) -> list[type]:
    """The dataclasses a field's type holds: itself, or the members of `X | None` / a union."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return [a for a in typing.get_args(hint) if isinstance(a, type) and dataclasses.is_dataclass(a)]
    return [hint] if isinstance(hint, type) and dataclasses.is_dataclass(hint) else []
