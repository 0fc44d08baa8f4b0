"""Every file in hardware_configs/ loads and validates; bad files fail with a clear message."""

from pathlib import Path

import pytest

from robot.cli import parse_command
from robot.commands.calibrate import CalibrateConfig
from robot.config import HARDWARE_CONFIGS, VIRTUAL_PORT, RigConfig
from robot.shell.errors import UsageError
from robot.virtual.faults import load_scenario

RIG_FILES = sorted(p for p in HARDWARE_CONFIGS.glob("*.yaml"))


def test_there_are_rig_files():
    names = {p.name for p in RIG_FILES}
    assert {"virtual.yaml", "so101_bimanual.yaml"} <= names


@pytest.mark.parametrize("path", RIG_FILES, ids=lambda p: p.name)
def test_rig_file_loads(path: Path):
    config = parse_command(CalibrateConfig, [f"--config_path={path}"]).rig
    assert isinstance(config, RigConfig)
    assert set(config.ports.by_arm()) >= {"left_follower", "right_follower"}


def test_virtual_file_is_virtual_and_template_is_real():
    virtual = parse_command(CalibrateConfig, [f"--config_path={HARDWARE_CONFIGS / 'virtual.yaml'}"]).rig
    real = parse_command(CalibrateConfig, [f"--config_path={HARDWARE_CONFIGS / 'so101_bimanual.yaml'}"]).rig
    assert virtual.is_virtual
    assert set(virtual.ports.by_arm().values()) == {VIRTUAL_PORT}
    assert not real.is_virtual
    assert all(p.startswith("/dev/serial/by-id/") for p in real.ports.by_arm().values())


@pytest.mark.parametrize("path", sorted((HARDWARE_CONFIGS / "scenarios").glob("*.yaml")), ids=lambda p: p.name)
def test_scenario_file_loads(path: Path):
    assert load_scenario(path)


def test_the_readme_explains_every_field():
    readme = (HARDWARE_CONFIGS / "README.md").read_text()
    for field in (
        "id",
        "left_follower",
        "on_mismatch",
        "reply_timeout_ms",
        "read_deadline_ms",
        "status_poll_period_s",
        "runtime_dir",
        "state_dir",
        "timing",
        "usb_latency_ms",
        "scenario",
        "seed",
        "tremor_steps",
        "calibrated",
    ):
        assert f"`{field}`" in readme, field


@pytest.mark.parametrize(
    ("yaml_text", "override", "message"),
    [
        ("id: 'bad id!'\nvirtual: {}\n", [], "id='bad id!'"),
        ("virtual: {}\nbus: {read_deadline_ms: 5, reply_timeout_ms: 10}\n", [], "bus.read_deadline_ms=5"),
        ("ports: {left_follower: /dev/ttyACM0}\nvirtual: {}\n", [], "mixing emulated and real arms"),
        ("id: x\n", [], "no `virtual:` section"),
        ("virtual: {timing: warp}\n", [], "warp"),
        ("virtual: {}\nnonsense: 1\n", [], "nonsense"),
        ("virtual: {}\n", ["--arms=left_arm"], "unknown left_arm"),
        (": : :\n", [], "cannot read rig file"),
    ],
)
def test_bad_rig_files_name_the_problem(tmp_path, yaml_text, override, message):
    path = tmp_path / "rig.yaml"
    path.write_text(yaml_text)

    def parse_and_select() -> None:
        parse_command(CalibrateConfig, [f"--config_path={path}", *override]).selected()

    with pytest.raises(UsageError) as info:
        parse_and_select()
    assert message in str(info.value)


def test_missing_rig_file(tmp_path):
    with pytest.raises(UsageError, match=r"nope\.yaml does not exist"):
        parse_command(CalibrateConfig, [f"--config_path={tmp_path / 'nope.yaml'}"])


def test_dotted_overrides_apply():
    config = parse_command(CalibrateConfig, ["--rig.bus.read_deadline_ms=30", "--rig.virtual.timing=usb"])
    assert config.rig.bus.read_deadline_ms == 30
    assert config.rig.virtual is not None
    assert config.rig.virtual.timing == "usb"
