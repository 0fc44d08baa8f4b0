"""The doctor's rows on what this user and machine let the rig do.

Real-time scheduling, opening the arms' serial ports, and the two system services that take
USB-serial adapters (brltty, ModemManager). Each probe takes what it reads as a parameter (a root
folder standing for `/`, a way to try SCHED_FIFO, a port's facts), so tests give a fake /proc tree
or a refusal.
"""

import contextlib
import grp
import os
import pwd
import resource
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from robot.config import VIRTUAL_PORT, RigConfig
from robot.doctor.rows import CheckRow, Status

CAP_SYS_NICE = 23  # capability bit: may raise scheduling priority whatever the rtprio limit
RTPRIO_SUGGESTED = 20  # the limit the fix writes, above every priority the rig uses by default (10, 11)
SERIAL_GROUPS = ("dialout", "uucp")  # who owns serial devices: Debian/Ubuntu/Fedora, Arch
UDEV_COMMAND = "so101-udev"

# What a thread at normal priority cost the loop (benchmarks/README.md, `loop_timing`).
REALTIME_LOST = (
    "the loop, bus and camera threads run at normal priority, so a video encoder's load can hold the loop"
    " up by a whole time slice: one ordinary thread measured 15-18 ms p99 period deviation with cameras"
    " and encoding, against 0.04-1.2 ms with all of them real-time (benchmarks/README.md)"
)

# Where brltty and ModemManager leave themselves, relative to `/`.
BRLTTY_FILES = (
    "usr/bin/brltty",
    "bin/brltty",
    "usr/lib/udev/rules.d/85-brltty.rules",
    "lib/udev/rules.d/85-brltty.rules",
    "usr/lib/systemd/system/brltty-udev.service",
    "lib/systemd/system/brltty-udev.service",
    "usr/lib/systemd/system/brltty.service",
    "lib/systemd/system/brltty.service",
)
MODEMMANAGER_FILES = (
    "usr/sbin/ModemManager",
    "sbin/ModemManager",
    "usr/bin/ModemManager",
    "usr/lib/systemd/system/ModemManager.service",
    "lib/systemd/system/ModemManager.service",
)
MODEMMANAGER_ENABLED = (
    "etc/systemd/system/multi-user.target.wants/ModemManager.service",
    "etc/systemd/system/dbus-org.freedesktop.ModemManager1.service",
)
MODEMMANAGER_MASK = "etc/systemd/system/ModemManager.service"  # a link to /dev/null when masked


# --- real-time scheduling -------------------------------------------------------------------------


def try_fifo(priority: int) -> OSError | None:
    """Ask for SCHED_FIFO at `priority` on a short-lived thread (put back, then ended); the refusal, or None."""
    outcome: list[OSError | None] = [OSError("the probe thread did not finish")]

    def attempt() -> None:
        try:
            old_policy, old_param = os.sched_getscheduler(0), os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except OSError as e:
            outcome[0] = e
            return
        outcome[0] = None
        with contextlib.suppress(OSError):  # the thread ends now anyway, and nothing inherits from it
            os.sched_setscheduler(0, old_policy, old_param)

    thread = threading.Thread(target=attempt, name="doctor-realtime-probe", daemon=True)
    thread.start()
    thread.join(timeout=5.0)
    return outcome[0]


def _has_capability(bit: int, status: Path = Path("/proc/self/status")) -> bool:
    try:
        for line in status.read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError):
        pass
    return False


def _rtprio_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    return 99 if soft == resource.RLIM_INFINITY else int(soft)


def _realtime_priority(rig: RigConfig) -> int:
    """The highest SCHED_FIFO priority the rig asks for (its loop, or the virtual rig's emulators)."""
    asked = [rig.realtime_priority]
    if rig.virtual is not None:
        asked.append(rig.virtual.realtime_priority)
    return max(asked)


def check_realtime(rig: RigConfig, probe: Callable[[int], OSError | None] = try_fifo) -> CheckRow:
    """Whether this user gets SCHED_FIFO at the rig's `realtime_priority`; a warning, with the fix, when not."""
    priority = _realtime_priority(rig)
    if priority <= 0 or not hasattr(os, "sched_setscheduler"):
        why = "realtime_priority is 0 in the rig file" if priority <= 0 else "this system has no SCHED_FIFO"
        return CheckRow("system", "real-time", Status.PASS, f"not asked for: {why}")
    limit = _rtprio_limit()
    refused = probe(priority)
    if refused is None:
        if os.geteuid() == 0:
            how = "root"
        elif _has_capability(CAP_SYS_NICE):
            how = "CAP_SYS_NICE"
        else:
            how = f"rtprio limit {limit}"
        return CheckRow("system", "real-time", Status.PASS, f"SCHED_FIFO at priority {priority} granted ({how})")
    facts = [f"rtprio limit {limit}" + (f", below the {priority} asked for" if 0 < limit < priority else "")]
    facts.append("root without CAP_SYS_NICE" if os.geteuid() == 0 else "not root")
    if os.geteuid() != 0 and not _has_capability(CAP_SYS_NICE):
        facts.append("no CAP_SYS_NICE")
    detail = f"SCHED_FIFO at priority {priority} refused ({'; '.join(facts)}): {REALTIME_LOST}"
    line = f'echo "$USER - rtprio {max(RTPRIO_SUGGESTED, priority)}" | sudo tee /etc/security/limits.d/so101.conf'
    fix = f"{line}, then log out and in (`ulimit -r` then shows the limit)"
    return CheckRow("system", "real-time", Status.WARN, detail, fix)


# --- serial ports ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PortAccess:
    """What this user may do with one arm's serial device."""

    arm: str
    port: str
    present: bool
    read_write: bool = False  # os.access(R_OK | W_OK) on the device
    group: str = ""  # the device's group (dialout on Debian and Ubuntu, uucp on Arch)
    in_group: bool = False  # this login's process holds that group (or is root)
    listed_in_group: bool = False  # /etc/group lists the user in it (true after usermod, before a new login)


def probe_port(arm: str, port: str) -> PortAccess:
    """The facts about `port` for the user running this."""
    try:
        info = os.stat(port)
    except OSError:
        return PortAccess(arm, port, present=False)
    try:
        group = grp.getgrgid(info.st_gid)
        name, members = group.gr_name, group.gr_mem
    except KeyError:
        name, members = str(info.st_gid), []
    user = _user_name()
    in_group = os.geteuid() == 0 or info.st_gid in os.getgroups() or info.st_gid == os.getegid()
    listed = user in members or _primary_gid(user) == info.st_gid
    return PortAccess(
        arm,
        port,
        present=True,
        read_write=os.access(port, os.R_OK | os.W_OK),
        group=name,
        in_group=in_group,
        listed_in_group=listed,
    )


def _user_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER", str(os.getuid()))


def _primary_gid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_gid
    except KeyError:
        return None


def _join_fix(group: str) -> str:
    add = SERIAL_GROUPS[0] if group not in SERIAL_GROUPS else group
    return (
        f"`sudo usermod -aG {add} $USER`, then log out and in; or install the udev rule that opens the arms'"
        f" adapters to you: `{UDEV_COMMAND}`"
    )


def serial_access_row(accesses: list[PortAccess], *, virtual: bool = False) -> CheckRow:
    """One row for every real port of the rig: can this user open it read/write, and through which group."""
    if virtual:
        return CheckRow("serial", "permissions", Status.PASS, "virtual rig: its emulated buses need no permission")
    present = [a for a in accesses if a.present]
    missing = [a.arm for a in accesses if not a.present]
    absent = f"; not plugged in: {', '.join(missing)} (see their port rows)" if missing else ""
    if not present:
        return CheckRow(
            "serial",
            "permissions",
            Status.WARN,
            f"none of the rig's {len(accesses)} port(s) is there to check{absent}",
            "plug in the arms and run so101-doctor again",
        )
    refused = [a for a in present if not a.read_write]
    if refused:
        detail = "; ".join(f"{a.arm}: {a.port} (group {a.group}) cannot be opened read/write" for a in refused)
        if all(a.listed_in_group and not a.in_group for a in refused):
            fix = f"you were added to group {refused[0].group}, but this login predates it: log out and in"
        else:
            fix = _join_fix(refused[0].group)
        return CheckRow("serial", "permissions", Status.FAIL, detail + absent, fix)
    outside = [a for a in present if not a.in_group]
    if outside:
        groups = sorted({a.group for a in outside})
        detail = (
            f"read/write on {len(present)} port(s), but not through group {', '.join(groups)}"
            f" (a desktop login's access, gone over ssh or for a service){absent}"
        )
        if all(a.listed_in_group for a in outside):
            return CheckRow(
                "serial", "permissions", Status.WARN, detail, f"you are in group {groups[0]} from your next login on"
            )
        return CheckRow("serial", "permissions", Status.WARN, detail, _join_fix(groups[0]))
    groups = ", ".join(sorted({a.group for a in present}))
    how = "root" if os.geteuid() == 0 else f"group {groups}"
    return CheckRow("serial", "permissions", Status.PASS, f"read/write on {len(present)} port(s) ({how}){absent}")


def check_serial_access(rig: RigConfig, probe: Callable[[str, str], PortAccess] = probe_port) -> CheckRow:
    """The permissions row for the rig's real ports."""
    if rig.is_virtual:
        return serial_access_row([], virtual=True)
    real = {arm: port for arm, port in rig.ports.by_arm().items() if port != VIRTUAL_PORT}
    return serial_access_row([probe(arm, port) for arm, port in real.items()])


# --- brltty and ModemManager ----------------------------------------------------------------------


def running_processes(root: Path = Path("/")) -> set[str]:
    """The command names (`/proc/<pid>/comm`) of every process under `root`'s /proc."""
    names: set[str] = set()
    try:
        entries = list((root / "proc").iterdir())
    except OSError:
        return names
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            names.add((entry / "comm").read_text().strip())
        except OSError:  # the process ended meanwhile, or is not ours to read
            continue
    return names


def _found(root: Path, paths: tuple[str, ...]) -> list[str]:
    return [f"/{p}" for p in paths if (root / p).exists() or (root / p).is_symlink()]


def _masked(root: Path, path: str) -> bool:
    target = root / path
    if not target.is_symlink():
        return False
    try:
        return os.readlink(target) == "/dev/null" or stat.S_ISCHR(target.stat().st_mode)
    except OSError:
        return False


def _only_real(row: CheckRow, virtual: bool) -> CheckRow:
    """On the virtual rig a service that takes USB-serial adapters harms nothing: said, not warned."""
    if not virtual or row.status is Status.PASS:
        return row
    return CheckRow(row.subject, row.check, Status.PASS, f"{row.detail} (matters with real arms only)", row.next_step)


def check_brltty(root: Path = Path("/"), processes: set[str] | None = None, *, virtual: bool = False) -> CheckRow:
    """The brltty row: that braille display driver claims CH340/CH341 adapters on Ubuntu; the arm's port vanishes."""
    names = running_processes(root) if processes is None else processes
    files = _found(root, BRLTTY_FILES)
    fix = "`sudo apt remove brltty` (unless you use a braille display), then unplug and replug the arms"
    harm = "it claims CH340/CH341 USB-serial adapters, the arms' boards, and their ports vanish after plugging in"
    if "brltty" in names:
        row = CheckRow("serial", "brltty", Status.WARN, f"running: {harm}", fix)
    elif files:
        row = CheckRow("serial", "brltty", Status.WARN, f"installed ({files[0]}): {harm}", fix)
    else:
        row = CheckRow("serial", "brltty", Status.PASS, "not installed")
    return _only_real(row, virtual)


def check_modemmanager(root: Path = Path("/"), processes: set[str] | None = None, *, virtual: bool = False) -> CheckRow:
    """ModemManager probes every new serial port for a modem, writing AT commands into the motors' bus."""
    names = running_processes(root) if processes is None else processes
    fix = "`sudo systemctl disable --now ModemManager` (unless this machine uses a mobile-broadband modem)"
    harm = "it probes new serial ports and can send AT bytes to the motors while a session uses them"
    if "ModemManager" in names:
        row = CheckRow("serial", "ModemManager", Status.WARN, f"running: {harm}", fix)
    elif _masked(root, MODEMMANAGER_MASK):
        row = CheckRow("serial", "ModemManager", Status.PASS, "masked: it cannot start")
    elif _found(root, MODEMMANAGER_ENABLED):
        row = CheckRow("serial", "ModemManager", Status.WARN, f"enabled, starts at boot: {harm}", fix)
    elif _found(root, MODEMMANAGER_FILES):
        row = CheckRow("serial", "ModemManager", Status.PASS, "installed, not running or enabled")
    else:
        row = CheckRow("serial", "ModemManager", Status.PASS, "not installed")
    return _only_real(row, virtual)


def check_machine_permissions(rig: RigConfig, root: Path = Path("/")) -> list[CheckRow]:
    """The serial rows (permissions, brltty, ModemManager), in table order."""
    processes = running_processes(root)
    return [
        check_serial_access(rig),
        check_brltty(root, processes, virtual=rig.is_virtual),
        check_modemmanager(root, processes, virtual=rig.is_virtual),
    ]
