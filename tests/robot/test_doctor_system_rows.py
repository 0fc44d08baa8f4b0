"""so101-doctor's machine rows: real-time permission (a warning with the limits.conf line when
refused), serial-port permissions, and brltty and ModemManager on a fake /proc and file tree."""

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from robot.config import BusConfig, CalibrationConfig, PortsConfig, RigConfig
from robot.doctor import Status, run_checks
from robot.doctor.permissions import (
    PortAccess,
    check_brltty,
    check_modemmanager,
    check_realtime,
    check_serial_access,
    probe_port,
    running_processes,
    serial_access_row,
)
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel

LIMITS_LINE = 'echo "$USER - rtprio 20" | sudo tee /etc/security/limits.d/so101.conf'
REAL_PORTS = PortsConfig(
    left_follower="/dev/serial/by-id/usb-1a86_A-if00",
    right_follower="/dev/serial/by-id/usb-1a86_B-if00",
    left_leader="/dev/serial/by-id/usb-1a86_C-if00",
    right_leader="",
)
REAL_RIG = RigConfig(ports=REAL_PORTS)
VIRTUAL_RIG = RigConfig(virtual=VirtualRigConfig())


def refused(priority: int) -> OSError:
    return PermissionError(1, "Operation not permitted")


def assert_realtime_warning(row) -> None:
    assert row.status is Status.WARN, row
    assert (row.subject, row.check) == ("system", "real-time")
    assert "refused" in row.detail
    assert "15-18 ms" in row.detail  # what is lost, as benchmarks/README.md measured it
    assert LIMITS_LINE in row.next_step, row.next_step
    assert "log out and in" in row.next_step


# --- real-time ------------------------------------------------------------------------------------


def test_no_realtime_permission_is_a_warning_with_the_limits_conf_line():
    assert_realtime_warning(check_realtime(REAL_RIG, probe=refused))


def test_no_realtime_permission_warns_in_a_process_that_really_lacks_it():
    # A child whose rtprio limit is 0 and, as root, without CAP_SYS_NICE in its bounding set: the
    # doctor's own probe (a short-lived SCHED_FIFO thread) is refused there.
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))\n"
        "from robot.doctor.permissions import CAP_SYS_NICE, _has_capability, check_realtime\n"
        "from robot.config import RigConfig, PortsConfig\n"
        "if _has_capability(CAP_SYS_NICE):\n"
        "    print('SKIP: CAP_SYS_NICE could not be dropped'); sys.exit(0)\n"
        "row = check_realtime(RigConfig(ports=PortsConfig('/dev/a', '/dev/b', '', '')))\n"
        "print(row.status.value); print(row.detail); print(row.next_step)\n"
    )
    command = [sys.executable, "-c", code]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        command = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2])
    if result.returncode != 0 and "setpriv" in result.stderr:  # setpriv itself refused (no CAP_SETPCAP)
        pytest.skip(result.stderr.strip())
    assert result.returncode == 0, result.stderr[-2000:]
    if result.stdout.startswith("SKIP"):
        pytest.skip(result.stdout.strip())
    status, detail, next_step = result.stdout.splitlines()
    assert status == Status.WARN.value, result.stdout
    assert "15-18 ms" in detail
    assert LIMITS_LINE in next_step
    assert "log out and in" in next_step


def test_the_probe_leaves_this_process_as_it_was():
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    check_realtime(REAL_RIG)
    assert (os.sched_getscheduler(0), os.sched_getparam(0)) == before


def test_granted_realtime_passes_and_says_how():
    row = check_realtime(REAL_RIG, probe=lambda priority: None)
    assert row.status is Status.PASS
    assert "priority 10 granted" in row.detail


def test_the_virtual_rig_asks_for_its_emulators_priority_too():
    asked = []
    check_realtime(VIRTUAL_RIG, probe=lambda priority: asked.append(priority))
    assert asked == [11]  # virtual.realtime_priority, above the loop's 10


def test_a_higher_priority_than_20_gets_a_limit_that_covers_it():
    row = check_realtime(RigConfig(ports=REAL_PORTS, realtime_priority=40), probe=refused)
    assert 'echo "$USER - rtprio 40"' in row.next_step


def test_realtime_off_in_the_rig_file_is_not_asked_for():
    row = check_realtime(RigConfig(ports=REAL_PORTS, realtime_priority=0), probe=refused)
    assert row.status is Status.PASS
    assert "realtime_priority is 0" in row.detail


def test_the_limit_is_reported():
    row = check_realtime(REAL_RIG, probe=refused)
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    limit = 99 if soft == resource.RLIM_INFINITY else soft
    assert f"rtprio limit {limit}" in row.detail


# --- serial permissions ---------------------------------------------------------------------------


def test_the_virtual_rig_needs_no_serial_permission():
    row = check_serial_access(VIRTUAL_RIG)
    assert row.status is Status.PASS
    assert "virtual rig" in row.detail


def test_a_port_the_user_cannot_open_fails_with_usermod_and_the_udev_rule():
    row = serial_access_row(
        [
            PortAccess("left_follower", "/dev/ttyACM0", present=True, read_write=False, group="dialout"),
            PortAccess("right_follower", "/dev/ttyACM1", present=True, read_write=True, group="dialout", in_group=True),
        ]
    )
    assert row.status is Status.FAIL
    assert "left_follower: /dev/ttyACM0 (group dialout) cannot be opened read/write" in row.detail
    assert "sudo usermod -aG dialout $USER" in row.next_step
    assert "log out and in" in row.next_step
    assert "so101-udev" in row.next_step


def test_added_to_the_group_but_not_logged_in_again():
    access = PortAccess("left_follower", "/dev/ttyACM0", present=True, group="dialout", listed_in_group=True)
    row = serial_access_row([access])
    assert row.status is Status.FAIL
    assert "log out and in" in row.next_step
    assert "usermod" not in row.next_step


def test_open_through_a_login_acl_but_not_the_group_warns():
    access = PortAccess("left_follower", "/dev/ttyACM0", present=True, read_write=True, group="uucp")
    row = serial_access_row([access])
    assert row.status is Status.WARN
    assert "sudo usermod -aG uucp $USER" in row.next_step


def test_ports_not_plugged_in_are_left_to_their_port_rows():
    ok = PortAccess("left_follower", "/dev/a", present=True, read_write=True, group="dialout", in_group=True)
    row = serial_access_row([ok, PortAccess("right_follower", "/dev/b", present=False)])
    assert row.status is Status.PASS
    assert "not plugged in: right_follower" in row.detail
    none = serial_access_row([PortAccess("right_follower", "/dev/b", present=False)])
    assert none.status is Status.WARN


def test_every_real_port_of_the_rig_is_probed():
    probed = []

    def probe(arm, port):
        probed.append((arm, port))
        return PortAccess(arm, port, present=True, read_write=True, group="dialout", in_group=True)

    row = check_serial_access(REAL_RIG, probe=probe)
    assert row.status is Status.PASS
    assert [arm for arm, _ in probed] == ["left_follower", "right_follower", "left_leader"]  # no right leader


def test_probing_a_real_file(tmp_path):
    device = tmp_path / "ttyACM0"
    device.write_bytes(b"")
    device.chmod(0o600)
    found = probe_port("left_follower", str(device))
    assert found.present
    assert found.read_write
    assert found.in_group  # the file's group is our own
    assert not probe_port("left_follower", str(tmp_path / "missing")).present


# --- brltty and ModemManager ----------------------------------------------------------------------


def fake_root(tmp_path: Path, processes: tuple[str, ...] = (), files: tuple[str, ...] = ()) -> Path:
    for pid, name in enumerate(processes, start=100):
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "comm").write_text(f"{name}\n")
    (tmp_path / "proc" / "self").mkdir(parents=True, exist_ok=True)  # not a pid: skipped
    for path in files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    return tmp_path


def test_the_process_list_comes_from_proc(tmp_path):
    root = fake_root(tmp_path, processes=("bash", "ModemManager"))
    assert running_processes(root) == {"bash", "ModemManager"}
    assert running_processes(tmp_path / "nowhere") == set()


def test_brltty_running_warns_with_the_remove_command(tmp_path):
    row = check_brltty(fake_root(tmp_path, processes=("brltty",)))
    assert row.status is Status.WARN
    assert "CH340/CH341" in row.detail
    assert "sudo apt remove brltty" in row.next_step


def test_brltty_installed_but_idle_still_warns(tmp_path):
    # Its udev rule starts it the moment a CH341 adapter appears.
    row = check_brltty(fake_root(tmp_path, files=("usr/lib/udev/rules.d/85-brltty.rules",)))
    assert row.status is Status.WARN
    assert "installed (/usr/lib/udev/rules.d/85-brltty.rules)" in row.detail


def test_no_brltty_passes(tmp_path):
    assert check_brltty(fake_root(tmp_path, processes=("bash",))).status is Status.PASS


def test_modemmanager_running_warns_with_the_disable_command(tmp_path):
    row = check_modemmanager(fake_root(tmp_path, processes=("ModemManager",)))
    assert row.status is Status.WARN
    assert "AT" in row.detail
    assert "sudo systemctl disable --now ModemManager" in row.next_step


def test_modemmanager_enabled_warns_installed_or_masked_passes(tmp_path):
    unit = "usr/lib/systemd/system/ModemManager.service"
    enabled = fake_root(tmp_path / "a", files=(unit, "etc/systemd/system/multi-user.target.wants/ModemManager.service"))
    assert check_modemmanager(enabled).status is Status.WARN
    installed = fake_root(tmp_path / "b", files=(unit,))
    assert check_modemmanager(installed).status is Status.PASS
    assert "not running" in check_modemmanager(installed).detail
    masked = fake_root(tmp_path / "c", files=(unit,))
    (masked / "etc/systemd/system").mkdir(parents=True)
    (masked / "etc/systemd/system/ModemManager.service").symlink_to("/dev/null")
    assert check_modemmanager(masked).detail.startswith("masked")
    assert check_modemmanager(fake_root(tmp_path / "d")).detail == "not installed"


def test_on_the_virtual_rig_they_are_said_not_warned(tmp_path):
    root = fake_root(tmp_path, processes=("brltty", "ModemManager"))
    for row in (check_brltty(root, virtual=True), check_modemmanager(root, virtual=True)):
        assert row.status is Status.PASS
        assert "real arms only" in row.detail


# --- in the doctor's table ------------------------------------------------------------------------


def test_run_checks_has_the_machine_rows_with_the_serial_ones_before_the_arms(tmp_path):
    virtual = VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0)
    model = VirtualRigModel(virtual)
    write_calibration_files(model, tmp_path / "calibration", "rows")
    rig = RigConfig(
        id="rows",
        calibration=CalibrationConfig(dir=tmp_path / "calibration"),
        bus=BusConfig(reply_timeout_ms=20.0, read_deadline_ms=50.0),
        virtual=virtual,
    )
    with in_process_ports(model) as ports:
        rows = run_checks(rig, {"left_follower": ports["left_follower"]}, tmp_path)
    keys = [(row.subject, row.check) for row in rows]
    for key in (("serial", "permissions"), ("serial", "brltty"), ("serial", "ModemManager"), ("system", "real-time")):
        assert key in keys, keys
    assert keys.index(("serial", "ModemManager")) < keys.index(("left_follower", "port"))
    assert [row for row in rows if row.subject == "serial" and row.status is not Status.PASS] == []  # virtual rig
