"""A text option keeps the text it was given.

draccus reads every command-line value as YAML before it converts it to the field's type, so a
`str` option lost its text whenever that text was also YAML of another kind: `--joint_map='{"a": "b"}'`
arrived as the Python repr `{'a': 'b'}` (and was refused as not JSON), `--task=01` as `1`, `--arms=[a,b]`
as `['a', 'b']`. Here the value of every plain `str` option is quoted as a YAML string before draccus
reads it; lists (robot/shell/lists.py), numbers, paths, enums and optional fields are left as they are,
and so is a value already in YAML's quotes (`--server.host="'::'"`, as so101-review's hint writes it).
"""

import dataclasses
import typing


def quoted_text(config_cls: type, argv: list[str]) -> list[str]:
    """`argv` with the value of every plain `str` option quoted as a YAML string (other arguments unchanged)."""
    text = _text_options(config_cls)
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        name, eq, value = arg.partition("=")
        if not arg.startswith("--") or name.removeprefix("--") not in text:
            out.append(arg)
            continue
        if not eq:  # `--task Fold`: the value is the next word
            value = next(args, "")
        quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""  # YAML's own quotes: as given
        out.append(f"{name}={value if quoted else _yaml_string(value)}")
    return out


def _yaml_string(value: str) -> str:
    """`value` as a single-quoted YAML scalar, which holds any text with only `'` doubled."""
    return "'" + value.replace("'", "''") + "'"


def _text_options(config_cls: type) -> set[str]:
    """The dotted names of the plain `str` fields of `config_cls` and its sections."""
    found: set[str] = set()

    def walk(cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if dataclasses.is_dataclass(hint) and isinstance(hint, type):
                walk(hint, f"{prefix}{f.name}.")
            elif hint is str:
                found.add(f"{prefix}{f.name}")

    walk(config_cls, "")
    return found
