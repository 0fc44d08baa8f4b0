"""One list syntax for every list option of every command.

draccus reads a list only as `[a,b]`: `--tags=a,b` was refused with a Python type name, and a
string option holding a list (`--arms=a,b`, replay's episodes) took only `a,b`. Here every list
option takes the same forms, rewritten to draccus's before it parses:

    --tags=a,b   --tags=[a,b]   --tags=a          the same list (a bare value is a one-item list)
    --dataset.episodes=1-3,7                     integer lists take ranges: [1,2,3,7]
    --dataset.episodes=all                       episode lists take `all`: the empty list, every episode
"""

import dataclasses
import json
import types
import typing
from pathlib import Path

EPISODE_FIELD = "episodes"  # an episode list: `all` (every episode) is the empty list
SCALARS = (str, int, float, Path)


def normalized_lists(config_cls: type, argv: list[str]) -> list[str]:
    """`argv` with the value of every list option in draccus's `[a,b]` form (other arguments unchanged).

    Raises:
        ValueError: an integer list item that is neither a number nor a range (`--dataset.episodes=1-x`),
            in one line naming the option.
    """
    lists = _list_options(config_cls)
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        name, eq, value = arg.partition("=")
        option = name.removeprefix("--")
        if not arg.startswith("--") or option not in lists:
            out.append(arg)
            continue
        if not eq:  # `--tags a,b`: the value is the next word
            value = next(args, "")
        try:
            kind = lists[option]
            value = bracketed(value, integers=kind is int, episodes=option.endswith(EPISODE_FIELD), strings=kind is str)
            out.append(f"{name}={value}")
        except ValueError:
            example = "all, 0,2,5 or 1-3" if option.endswith(EPISODE_FIELD) else "0,2,5 or 1-3"
            raise ValueError(f"--{option}={value}: expected a list of numbers or ranges, e.g. {example}") from None
    return out


def bracketed(value: str, *, integers: bool = False, episodes: bool = False, strings: bool = False) -> str:
    """`value` as `[a,b]`: brackets added, integer ranges expanded, `all` episodes as `[]`.

    `strings`: the items are strings (or paths), quoted so YAML, which draccus reads the list with, takes
    each as written: unquoted, `2:10:40` is the number 7840 (base 60), `no` is False and `1e3` a float.
    """
    text = value.strip()
    if episodes and text == "all":
        return "[]"
    if text.startswith("[") and not integers:  # draccus's own form (or YAML, e.g. a list of mappings): as is
        return text
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    items = [item.strip() for item in inner.split(",") if item.strip()]
    if integers:
        items = [str(n) for item in items for n in _integers(item)]
    if strings:
        items = [item if item[:1] in "\"'" else json.dumps(item) for item in items]
    return "[" + ",".join(items) + "]"


def split_list(value: str) -> list[str]:
    """The items of a list option held in a string field (`a,b` or `[a,b]`), stripped."""
    text = value.strip()
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    return [item.strip() for item in inner.split(",") if item.strip()]


def _integers(item: str) -> range:
    first, dash, last = item.partition("-")
    if dash and first.strip():  # `1-3` (a leading minus is a negative number, not a range)
        return range(int(first), int(last) + 1)
    return range(int(item), int(item) + 1)


def _list_options(config_cls: type) -> dict[str, type | None]:
    """Option name -> its items' kind (int; str for strings and paths; else None), for each list or tuple field."""
    found: dict[str, type | None] = {}

    def walk(cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            hint = _without_none(hints[f.name])
            name = f"{prefix}{f.name}"
            if dataclasses.is_dataclass(hint) and isinstance(hint, type):
                walk(hint, f"{name}.")
            elif typing.get_origin(hint) in (list, tuple, set, frozenset):
                args = [a for a in typing.get_args(hint) if a is not Ellipsis]
                if all(a in SCALARS for a in args):  # a list of sections (the rig's cameras) stays YAML
                    kinds = {int if a is int else str if a in (str, Path) else None for a in args}
                    found[name] = kinds.pop() if len(kinds) == 1 else None

    walk(config_cls, "")
    return found


def _without_none(hint: object) -> object:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint
