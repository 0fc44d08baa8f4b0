"""so101-doctor's power row against the rig file's `power` profile, on the emulator: a 12 V-profile
follower at 7.4 V fails with the fix (`power: 5v`, or the 12 V supply); a 5 V build passes; 12 V on a
5 V build, and leaders on 12 V, fail; a follower and a leader swapped show in their voltages."""

from contextlib import ExitStack
from pathlib import Path

import pytest

from robot.cli import parse_command
from robot.commands.doctor import DoctorConfig
from robot.config import HARDWARE_CONFIGS, BusConfig, CalibrationConfig, PowerProfile, RigConfig
from robot.doctor.arms import check_arm, file_calibrations
from robot.doctor.rows import CheckRow, Status
from robot.errors import ConfigError
from robot.virtual.config import TimingMode, VirtualRigConfig, config_from_json, config_to_json
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel

FOLLOWERS = ("left_follower", "right_follower")
LEADERS = ("left_leader", "right_leader")


@pytest.fixture
def power_rig(tmp_path):
    """The doctor's arm check on an in-process emulator whose followers' supply is `follower_supply_v`."""
    with ExitStack() as stack:

        def start(follower_supply_v: float, power: PowerProfile):
            virtual = VirtualRigConfig(
                timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0, follower_supply_v=follower_supply_v
            )
            model = VirtualRigModel(virtual)
            root = tmp_path / "calibration"
            write_calibration_files(model, root, "power")
            rig = RigConfig(
                id="power",
                power=power,
                calibration=CalibrationConfig(dir=root),
                bus=BusConfig(reply_timeout_ms=20.0, read_deadline_ms=50.0),
                virtual=virtual,
            )
            ports = stack.enter_context(in_process_ports(model))

            def power_rows(port_map: dict[str, str] = ports) -> dict[str, CheckRow]:
                files = file_calibrations(rig)
                return {
                    name: row
                    for name, port in port_map.items()
                    for row in check_arm(name, port, rig, files)
                    if row.check == "power"
                }

            return power_rows, ports

        yield start


def test_a_12v_profile_follower_at_7_4_v_fails_with_both_causes_and_the_rig_file_line(power_rig):
    power_rows, _ = power_rig(7.4, PowerProfile.V12)
    rows = power_rows()
    for name in FOLLOWERS:
        row = rows[name]
        assert row.status is Status.FAIL, row
        assert "7." in row.detail, row.detail
        assert "12v profile" in row.detail, row.detail
        assert "12 V supply is not plugged in" in row.next_step, row.next_step
        assert "set `power: 5v` in the rig file" in row.next_step, row.next_step
        assert "swapped" not in row.next_step  # 7.4 V is no leader's 5 V
    for name in LEADERS:
        assert rows[name].status is Status.PASS, rows[name]


def test_a_5v_profile_passes_at_7_v(power_rig):
    power_rows, _ = power_rig(7.0, PowerProfile.V5)
    rows = power_rows()
    assert {name: row.status for name, row in rows.items()} == dict.fromkeys((*FOLLOWERS, *LEADERS), Status.PASS)
    assert "5v profile" in rows["left_follower"].detail


def test_a_5v_profile_follower_at_12_v_fails_above_the_motors_rating(power_rig):
    power_rows, _ = power_rig(12.0, PowerProfile.V5)
    rows = power_rows()
    for name in FOLLOWERS:
        assert rows[name].status is Status.FAIL, rows[name]
        assert "7.4 V motors" in rows[name].detail
        assert "unplug that supply now" in rows[name].next_step
        assert "set `power: 12v` in the rig file" in rows[name].next_step


def test_the_default_12v_profile_passes_on_12_v(power_rig):
    power_rows, _ = power_rig(12.0, PowerProfile.V12)
    assert {row.status for row in power_rows().values()} == {Status.PASS}


def test_a_leader_port_at_12_v_is_most_likely_a_follower(power_rig):
    power_rows, ports = power_rig(12.0, PowerProfile.V12)
    swapped = dict(ports) | {"left_follower": ports["left_leader"], "left_leader": ports["left_follower"]}
    rows = power_rows(swapped)
    leader = rows["left_leader"]
    assert leader.status is Status.FAIL, leader
    assert "most likely a follower" in leader.detail
    assert "swap" in leader.next_step
    follower = rows["left_follower"]  # the leader's motors, on 5 V, under the 12v profile
    assert follower.status is Status.FAIL, follower
    assert "swapped" in follower.next_step, follower.next_step
    assert "set `power: 5v` in the rig file" in follower.next_step


def test_power_in_the_rig_file(tmp_path):
    rig_file = tmp_path / "rig.yaml"
    template = (HARDWARE_CONFIGS / "so101_bimanual.yaml").read_text()
    assert "\npower: 12v" in template  # the template says it, with its comment
    assert parse_command(DoctorConfig, [f"--config_path={HARDWARE_CONFIGS / 'so101_bimanual.yaml'}"]).rig.power == "12v"
    rig_file.write_text(template.replace("\npower: 12v", "\npower: 5v"))
    assert parse_command(DoctorConfig, [f"--config_path={rig_file}"]).rig.power is PowerProfile.V5
    virtual = parse_command(DoctorConfig, [f"--config_path={HARDWARE_CONFIGS / 'virtual.yaml'}"]).rig
    assert virtual.power is PowerProfile.V12  # the default


def test_power_profiles_read_as_written_and_refuse_others():
    assert PowerProfile("12V") is PowerProfile.V12
    assert PowerProfile(5) is PowerProfile.V5
    assert RigConfig(power="5v", virtual=VirtualRigConfig()).power is PowerProfile.V5
    with pytest.raises(ConfigError, match="power='7v': expected 12v"):
        RigConfig(power="7v", virtual=VirtualRigConfig())


def test_the_follower_supply_reaches_the_emulator_process_and_is_checked():
    config = VirtualRigConfig(follower_supply_v=7.4)
    assert config_from_json(config_to_json(config)).follower_supply_v == 7.4
    with pytest.raises(ValueError, match="follower_supply_v"):
        VirtualRigConfig(follower_supply_v=0.0)


def test_the_emulated_followers_report_the_configured_supply():
    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, follower_supply_v=7.4))
    assert {m.supply_v for m in model.buses["right_follower"].motors} == {7.4}
    assert {m.supply_v for m in model.buses["right_leader"].motors} == {5.0}


def test_the_readme_documents_power():
    readme = (Path(HARDWARE_CONFIGS) / "README.md").read_text()
    assert "`power`" in readme
    assert "power: 5v" in readme
