"""draccus's parse errors, said the way our own errors are: what is wrong, with the allowed values.

draccus reports a bad enum value as `Failed when parsing value='fast' into field "<class
'policies.engines.config.EngineConfig'>.kind" of type <enum 'EngineKind'>. (KeyError: 'fast')`:
Python names and a KeyError, and not one word of what would have been accepted. Here that becomes
"`engine.kind`: 'fast' is not one of sync, async, rtc, ensemble, remote". Our own validation
messages (a CommandError raised in a config's `__post_init__`, which draccus wraps) pass unchanged.
"""

import dataclasses
import re
import types
import typing
from enum import Enum

from robot.shell.errors import CommandError

_ENUM_FAILURE = re.compile(r"`(?P<field>[\w.]+)`: Failed when parsing value='(?P<value>[^']*)' into field .* <enum ")


def explain_parse_error(error: BaseException, config_cls: type | None = None) -> str:
    """Our own validation message if one is in the chain, else draccus's (it names the field).

    With `config_cls`, a bad value of an enum field names the values it takes.
    """
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, CommandError):
            return str(cause)
        cause = cause.__cause__ or cause.__context__
    text = str(error).strip()
    if config_cls is not None:
        # An enum inside an optional section fails twice: the section's "could not decode into any
        # of the given types", caused by the field's own failure, which names it in full.
        cause = error
        while cause is not None:
            match = _ENUM_FAILURE.search(str(cause))
            choices = enum_choices(config_cls, match["field"]) if match else []
            if match and choices:
                return f"`{match['field']}`: {match['value']!r} is not one of {', '.join(choices)}"
            cause = cause.__cause__ or cause.__context__
    first_line = text.splitlines()[0] if text else type(error).__name__
    underlying = text.split("Underlying error is", 1)
    return first_line + (f" ({underlying[1].strip().strip('"')})" if len(underlying) == 2 else "")


def flag_named(message: str, args: list[str]) -> str | None:
    """The command-line flag that set the field an error names (`engine.kind`, or `bus.x=...`), if one did.

    A bad value comes from the command line or from the rig file; saying which saves a user
    searching a file they never changed. A flag matches when its dotted name ends with the field's
    (`--rig.bus.read_deadline_ms` sets `bus.read_deadline_ms`).
    """
    named = re.match(r"`?(?P<field>[\w.]+)`?\s*[:=]", message)
    if named is None:
        return None
    field = named["field"]
    for arg in args:
        flag = arg.split("=", 1)[0]
        name = flag.removeprefix("--")
        if flag.startswith("--") and (name == field or name.endswith(f".{field}")):
            return flag
    return None


def enum_choices(config_cls: type, dotted: str) -> list[str]:
    """The values the enum field at `dotted` (e.g. "engine.kind") of `config_cls` takes; [] if it is no enum."""
    current: object = config_cls
    for name in dotted.split("."):
        if not (isinstance(current, type) and dataclasses.is_dataclass(current)):
            return []
        hints = typing.get_type_hints(current)
        if name not in hints:
            return []
        current = _unwrap_optional(hints[name])
    if isinstance(current, type) and issubclass(current, Enum):
        return [str(member.value) for member in current]
    return []


def _unwrap_optional(hint: object) -> object:
    """`X | None` -> X; anything else unchanged."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint
