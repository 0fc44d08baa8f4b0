"""Write one top-level section of a rig file, keeping every other line and comment as the person left them.

    ensure_rig_file(Path("my_rig.yaml"))                      # a copy of the real-rig template, if missing
    write_rig_section(Path("my_rig.yaml"), "ports", {"left_follower": "/dev/so101_left_follower", ...})
    write_rig_section(Path("my_rig.yaml"), "cameras", [{"kind": "opencv", "name": "overhead", ...}])

Text, not a YAML round trip: a YAML library drops comments, and rig files are full of them. A
section is the block from its `key:` line at column 0 to its last indented line before the next
top-level key; comments between sections (at column 0) stay with the section below them. A list
of mappings is written one flow mapping a line, as hardware_configs/so101_bimanual.yaml writes
its cameras. The new text is checked by loading it as a rig, the same way every command does,
before it replaces the file (a temporary file, then os.replace): on any failure the file is as it was.
"""

import dataclasses
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePath

import yaml

from robot.cli import UsageError, parse_command
from robot.config import HARDWARE_CONFIGS, RigConfig
from robot.errors import ConfigError
from robot.shell.files import why_unreadable

TEMPLATE_RIG_FILE = HARDWARE_CONFIGS / "so101_bimanual.yaml"
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)\s*:(\s|$)")
# `  key: value   # comment`, a value without quotes (so its `#` cannot be inside a string)
_COMMENTED = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_.-]*):([^#'\"]*?)(\s+#.*)$")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_.-]*):(.*)$")
_WIDE = 10**6  # no line wrapping: one camera a line


class RigFileError(ConfigError):
    """A rig file could not be written (or created); the file is unchanged."""


@dataclass(frozen=True)
class _RigOnly:
    """What validation parses: a rig and nothing else."""

    rig: RigConfig = field(default_factory=RigConfig)


class _Dumper(yaml.SafeDumper):
    """Block lists indented under their key (`  - a`), as the rig files write them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def write_rig_section(path: Path, key: str, value: object) -> None:
    """Replace (or append) the top-level section `key` of the rig file at `path` with `value`.

    `value` may hold dataclasses, enums and paths; they are written as plain YAML.

    Raises:
        RigFileError: the file cannot be read or written, holds `key:` twice, or would not load as a
            rig with this value (then the file is unchanged).
    """
    if not _TOP_KEY.match(f"{key}:"):
        raise RigFileError(f"rig file section {key!r} is not a top-level key name. Next: use a key such as `cameras`")
    if (why := why_unreadable(path)) is not None:
        raise RigFileError(
            f"cannot write `{key}:` into {path}: it {why}. Next: cp {TEMPLATE_RIG_FILE} {path}, or give --config_path"
        )
    plain = plain_yaml(value)
    old_text = path.read_text()
    new_text = replaced_section(old_text, key, section_text(key, plain), path)
    try:
        loaded = yaml.safe_load(new_text) or {}
    except yaml.YAMLError as e:  # the rest of the file was not YAML to begin with
        raise RigFileError(f"{path} is not valid YAML ({e}). Next: fix the file by hand, then retry") from None
    if not isinstance(loaded, dict) or loaded.get(key) != plain:
        raise RigFileError(
            f"{path}: the new `{key}:` section does not read back as written (the file's layout around it is "
            f"unusual). Next: edit the `{key}:` section of {path} by hand"
        )
    _replace_checked(path, new_text, f"`{key}:`")


def ensure_rig_file(path: Path, rig_id: str | None = None, template: Path = TEMPLATE_RIG_FILE) -> bool:
    """Create the rig file `path` from `template` (the real-rig template) unless it exists; True if created.

    `rig_id`: the new file's `id` (calibration files are named after it); None keeps the template's.

    Raises:
        RigFileError: `path` cannot be created (its folder is not writable), or `rig_id` is not allowed.
    """
    if path.exists():
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = template.read_text()
    except OSError as e:
        raise RigFileError(f"cannot create rig file {path}: {e.strerror or e}. Next: give a writable path") from None
    _replace_checked(path, text, "a new rig file", exclusive=True)
    if rig_id is not None:
        try:
            write_rig_section(path, "id", rig_id)
        except RigFileError:
            path.unlink()  # a half-made file would be found, and used, next time
            raise
    return True


def section_text(key: str, value: object) -> str:
    """The YAML text of the top-level section `key: value` (plain values), ending in a newline."""
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        flows = (yaml.safe_dump(item, default_flow_style=True, sort_keys=False, width=_WIDE).strip() for item in value)
        return f"{key}:\n" + "".join(f"  - {flow}\n" for flow in flows)
    return yaml.dump({key: value}, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=_WIDE)


def replaced_section(text: str, key: str, section: str, path: Path | str = "the rig file") -> str:
    """`text` with its top-level section `key` replaced by `section` (appended if it has none).

    Comments on a replaced key, beside it (`fps: 30  # the control rate`) or on the indented lines
    just above it, are kept where the new section has the same key at the same indent.

    Raises:
        RigFileError: `text` holds `key:` at column 0 more than once.
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _TOP_KEY.match(line) or line.startswith(("---", "..."))]
    mine = [i for i in starts if (m := _TOP_KEY.match(lines[i])) and m.group(1) == key]
    if len(mine) > 1:
        where = ", ".join(str(i + 1) for i in mine)
        raise RigFileError(f"{path} has `{key}:` on lines {where}. Next: delete all but one, then retry")
    if not mine:
        ending = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{ending}{section}"
    start = mine[0]
    following = next((i for i in starts if i > start), len(lines))
    end = start + 1
    for i in range(start + 1, following):
        if _is_block_content(lines[i]):
            end = i + 1
    section = _with_comments(section, lines[start:end])
    return "".join(lines[:start]) + section + "".join(lines[end:])


def plain_yaml(value: object) -> object:
    """`value` as YAML's plain types: dataclasses as mappings, enums as their values, paths as text.

    Raises:
        RigFileError: a value YAML cannot hold (an object, a set).
    """
    match value:
        case None | bool() | int() | float():
            return value
        case Enum():
            return plain_yaml(value.value)
        case str() | PurePath():
            return str(value)
        case Mapping():
            return {str(k): plain_yaml(v) for k, v in value.items()}
        case list() | tuple():
            return [plain_yaml(item) for item in value]
        case _ if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain_yaml(getattr(value, f.name)) for f in dataclasses.fields(value)}
    raise RigFileError(f"cannot write {value!r} into a rig file. Next: give numbers, text, lists or mappings")


def _is_block_content(line: str) -> bool:
    """An indented line (or a column-0 list item) that is not only a comment: part of the section above."""
    stripped = line.strip()
    if not stripped:
        return False
    if line[0] in " \t":
        return not stripped.startswith("#")
    return line.startswith("-") and not line.startswith("---")


def _with_comments(section: str, old_lines: list[str]) -> str:
    """`section` with the old lines' comments on the keys it still has: beside a key, and the lines above it."""
    beside: dict[tuple[str, str], str] = {}
    above: dict[tuple[str, str], list[str]] = {}
    pending: list[str] = []
    for line in (line.rstrip("\n") for line in old_lines):
        if line[:1] in " \t" and line.lstrip().startswith("#"):
            pending.append(line)
            continue
        if (m := _KEY_LINE.match(line)) is not None:
            above[(m.group(1), m.group(2))], pending = pending, []
        if (m := _COMMENTED.match(line)) is not None:
            beside[(m.group(1), m.group(2))] = m.group(4)
    out = []
    for line in section.splitlines():
        m = _KEY_LINE.match(line)
        key = (m.group(1), m.group(2)) if m is not None else None
        out += above.get(key, []) if key is not None else []
        comment = beside.get(key) if key is not None else None
        out.append(f"{line}{comment}" if comment is not None and "#" not in line else line)
    return "\n".join(out) + "\n"


def _replace_checked(path: Path, text: str, what: str, exclusive: bool = False) -> None:
    """Write `text` to a temporary file beside `path`, load it as a rig, then move it over `path`.

    `exclusive`: `path` must not exist (creating a file, never replacing one).
    """
    try:
        descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise RigFileError(f"cannot write {path}: {e.strerror or e}. Next: check the folder's permissions") from None
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)  # keep the file's mode, not the temp file's 0600
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        _check_loads(temporary, path, what)
        if exclusive:
            os.link(temporary, path)  # fails if the file appeared meanwhile: never overwrite one
        else:
            os.replace(temporary, path)
    except FileExistsError:
        raise RigFileError(f"{path} exists already. Next: give another path, or edit {path}") from None
    except OSError as e:
        raise RigFileError(f"cannot write {path}: {e.strerror or e}. Next: check the folder's permissions") from None
    finally:
        temporary.unlink(missing_ok=True)


def _check_loads(candidate: Path, path: Path, what: str) -> None:
    """Load `candidate` as every command loads a rig file; a refusal names `path`, not the temporary file."""
    try:
        parse_command(_RigOnly, [f"--config_path={candidate}"])
    except UsageError as e:
        reason = str(e).replace(str(candidate), str(path)).removeprefix(f"{path}: ")
        if "Next:" not in reason:
            reason += ". Next: correct the value and retry (hardware_configs/README.md explains each field)"
        raise RigFileError(f"not written: {path} with {what} would not load as a rig: {reason}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
