"""Which camera is which: the person's choice (`left_wrist=2,right_wrist=0,overhead=1`) as rig file entries.

    roles = parse_roles("left_wrist=2,right_wrist=0,overhead=1", cameras)   # {"left_wrist": 2, ...}
    entries, notes = rig_camera_entries(roles, cameras, rig)              # for write_rig_section(..., "cameras", ...)

A real camera's entry keeps what the rig file said for that role (size, rate, format, exposure,
gain, focus, capture) with the new device; a new role gets 640x480 MJPG at the rig's `fps`. A
mode the camera does not offer is swapped for the nearest one it offers at that rate, with a note.
"""

from collections.abc import Callable, Sequence
from dataclasses import fields

from robot.cameras.config import CameraConfig, OpenCVCameraConfig
from robot.cli import UsageError
from robot.config import RigConfig
from robot.joints import CAMERA_ROLES
from robot.setup.camera_modes import CameraMode, choose_mode
from robot.setup.cameras import FoundCamera
from robot.setup.rig_file import plain_yaml

_ALWAYS_WRITTEN = ("kind", "name", "device", "view", "width", "height", "fps", "fourcc")
_EXAMPLE = "--roles=left_wrist=2,right_wrist=0,overhead=1"


def parse_roles(text: str, cameras: Sequence[FoundCamera]) -> dict[str, int]:
    """`role=number,...` as {role: camera number}, in CAMERA_ROLES order; roles left out have no camera.

    Raises:
        UsageError: an unknown role, a number no camera has, a role or a camera given twice.
    """
    numbers = {camera.number for camera in cameras}
    chosen: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        role, _, number = part.partition("=")
        role = role.strip()
        if role not in CAMERA_ROLES:
            raise UsageError(
                f"--roles: {role!r} is not a camera role; the roles are {', '.join(CAMERA_ROLES)}. Next: {_EXAMPLE}"
            )
        if not number.strip().isdigit() or int(number) not in numbers:
            raise UsageError(
                f"--roles: {part!r} names no camera; the cameras are numbered "
                f"{', '.join(str(n) for n in sorted(numbers))}. Next: {_EXAMPLE}"
            )
        if role in chosen:
            raise UsageError(f"--roles: {role} is given twice. Next: {_EXAMPLE}")
        chosen[role] = int(number)
    twice = sorted({n for n in chosen.values() if list(chosen.values()).count(n) > 1})
    if twice:
        raise UsageError(f"--roles: camera {twice[0]} is given two roles; each camera has one. Next: {_EXAMPLE}")
    return {role: chosen[role] for role in CAMERA_ROLES if role in chosen}


def prompt_roles(
    cameras: Sequence[FoundCamera], ask: Callable[[str], str] = input, say: Callable[[str], None] = print
) -> dict[str, int]:
    """Ask the person at the terminal for each role's camera number (Enter: no camera for it)."""
    numbers = {camera.number for camera in cameras}
    chosen: dict[str, int] = {}
    for role in CAMERA_ROLES:
        while True:
            answer = ask(f"camera number for {role} (Enter: none): ").strip()
            if not answer:
                break
            if answer.isdigit() and int(answer) in numbers and int(answer) not in chosen.values():
                chosen[role] = int(answer)
                break
            taken = ", ".join(str(n) for n in chosen.values()) or "none"
            listed = ", ".join(str(n) for n in sorted(numbers))
            say(f"{answer!r} is not a free camera number (cameras: {listed}; taken: {taken})")
    return chosen


def rig_camera_entries(
    roles: dict[str, int], cameras: Sequence[FoundCamera], rig: RigConfig
) -> tuple[list[dict[str, object]], list[str]]:
    """The rig file's new `cameras:` entries for the chosen roles, and notes for the person.

    Raises:
        UsageError: a chosen camera offers no mode at the rig's rate (`fps`).
    """
    by_number = {camera.number: camera for camera in cameras}
    old = {config.name: config for config in rig.cameras}
    entries, notes = [], []
    for role, number in roles.items():
        camera = by_number[number]
        if camera.virtual is not None:
            entries.append(config_entry(camera.virtual, name=role))
            continue
        before = old.get(role)
        base = before if isinstance(before, OpenCVCameraConfig) else None
        if base is not None:
            wanted = CameraMode(base.fourcc or "MJPG", base.width, base.height, base.fps)
        else:
            wanted = CameraMode("MJPG", 640, 480, float(rig.fps))
        mode = choose_mode(camera.modes, wanted)
        if mode is None:
            raise UsageError(
                f"camera {number} ({camera.device}) offers no mode at {wanted.fps:g} fps for {role} "
                f"(it offers {', '.join(str(m) for m in camera.modes)}). Next: give {role} another camera, "
                f"e.g. --roles={role}=<number>"
            )
        if mode != wanted:
            notes.append(f"{role}: camera {number} does not offer {wanted}; using {mode}")
        if camera.naming_note:
            notes.append(f"{role}: camera {number} {camera.naming_note}")
        entry = config_entry(base, name=role) if base is not None else {"kind": "opencv", "name": role}
        entry.update(
            device=camera.stable_device, width=mode.width, height=mode.height, fps=_number(mode.fps), fourcc=mode.fourcc
        )
        entries.append(entry)
    missing = [role for role in CAMERA_ROLES if role not in roles]
    if missing:
        notes.append(f"no camera for {', '.join(missing)}: the rig file will have none")
    return entries, notes


def config_entry(config: CameraConfig, name: str | None = None) -> dict[str, object]:
    """A camera config as a rig file entry: kind and name first, size and rate always, the rest when not default."""
    defaults = type(config)(name=config.name, **({"device": config.device} if hasattr(config, "device") else {}))
    entry: dict[str, object] = {"kind": str(config.kind), "name": name or config.name}
    for f in fields(config):
        value = getattr(config, f.name)
        if f.name in ("kind", "name"):
            continue
        if f.name == "capture":
            changed = {
                c.name: getattr(value, c.name)
                for c in fields(value)
                if getattr(value, c.name) != getattr(defaults.capture, c.name)
            }
            if changed:
                entry["capture"] = plain_yaml(changed)
        elif f.name in _ALWAYS_WRITTEN or value != getattr(defaults, f.name):
            entry[f.name] = _number(value) if f.name == "fps" else plain_yaml(value)
    return entry


def _number(value: float) -> int | float:
    """30.0 as 30: the rig files write whole rates as integers."""
    return int(value) if float(value).is_integer() else value
