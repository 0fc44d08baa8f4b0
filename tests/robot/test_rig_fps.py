"""The rig file's `fps` is the one control rate: the loop, the status line, the guard's per-tick limits and
the move to rest all follow it; a camera that cannot feed it is refused when the file is parsed.

The dataset's rate at 60 Hz is checked end to end in tests/test_record_e2e.py.
"""

import io
import itertools
import time

import pytest
import yaml
from rich.console import Console

from robot.cli import UsageError, parse_command
from robot.config import CalibrationConfig, RigConfig
from robot.control_loop import ControlLoop
from robot.joints import JOINT_NAMES, Side
from robot.rig import BimanualRig
from robot.safety.config import ExitMode, SafetyConfig
from robot.virtual.config import TimingMode, VirtualRigConfig
from robot.virtual.inprocess import in_process_ports
from robot.virtual.precalibrated import write_calibration_files
from robot.virtual.rig_model import VirtualRigModel
from teleop.commands.record import RecordConfig
from teleop.status_line import StatusLine

RAMP_DEG_S = 30.0
SPEED_DEG_S = 60.0
STEP_DEG = 360 / 4096  # one servo step: what `act` returns is rounded to it


@pytest.fixture
def rig_at(tmp_path):
    model = VirtualRigModel(VirtualRigConfig(timing=TimingMode.INSTANT, calibrated=True, tremor_steps=0.0))
    root = tmp_path / "calibration"
    write_calibration_files(model, root, "rig")
    with in_process_ports(model) as ports:

        def make(fps: int) -> BimanualRig:
            safety = SafetyConfig(
                max_step_deg=90.0,
                max_velocity_deg_s=SPEED_DEG_S,
                ramp_speed_deg_s=RAMP_DEG_S,
                on_exit=ExitMode.REST_THEN_RELEASE,
            )
            config = RigConfig(
                id="rig", fps=fps, calibration=CalibrationConfig(dir=root), safety=safety, virtual=VirtualRigConfig()
            )
            return BimanualRig(config, ports)

        yield make


class _Still:
    """An action source (robot.control_loop.ActionSource) that asks for where the followers are."""

    def action(self, observation, tick):
        return observation.state()


def _engage(rig: BimanualRig) -> None:
    for _ in range(200):
        rig.act(rig.observe().state())
        if not rig.in_transition:
            return
        time.sleep(1 / rig.config.fps)
    raise AssertionError("the connect transition did not end on a still arm")


@pytest.mark.parametrize("fps", [30, 60])
@pytest.mark.slow
def test_the_loop_status_line_guard_and_rest_move_run_at_the_rig_files_fps(rig_at, fps):
    with rig_at(fps) as rig:
        assert ControlLoop(rig, _Still()).timer.period_s == pytest.approx(1 / fps)
        assert StatusLine(rig, Console(file=io.StringIO())).period_s == pytest.approx(1 / fps)
        _engage(rig)
        # The guard's caps are per tick of the rig's rate (`act` outside a loop assumes one period of it).
        # After a pause the velocity cap allows at most 2 periods' travel; a transition ramps 1 period's.
        # Caps count from the last goal sent, not from where the joint is (a loaded follower rests off its
        # goal by gravity's give and the gearbox play).
        wrist = (Side.RIGHT, "wrist_flex")
        start = rig.act(rig.observe().state())[wrist]
        time.sleep(0.2)  # longer than 2 periods at either rate
        sent = rig.act(rig.observe().state().with_joint(*wrist, start + 40.0))
        assert sent[wrist] - start == pytest.approx(2 * SPEED_DEG_S / fps, abs=STEP_DEG)
        rig.begin_transition("a new source")
        time.sleep(0.2)
        before = sent[wrist]
        sent = rig.act(rig.observe().state().with_joint(*wrist, before + 40.0))
        assert sent[wrist] - before == pytest.approx(RAMP_DEG_S / fps, abs=STEP_DEG)

        state = rig.observe().state()
        away = state.with_joint(Side.LEFT, "wrist_flex", state[Side.LEFT, "wrist_flex"] + 20.0)
        for _ in range(3 * fps):  # away from the rest pose (1 s; the velocity cap covers 20 degrees in 1/3 s)
            rig.act(away)
            time.sleep(1 / fps)
        written: list[dict[str, float]] = []
        arm = rig.follower(Side.LEFT)
        real_write = arm.write_joints

        def spy(goals):
            written.append(dict(goals))
            return real_write(goals)

        arm.write_joints = spy
        rig.go_to_rest()
    steps = [max(abs(b[j] - a[j]) for j in JOINT_NAMES if j != "gripper") for a, b in itertools.pairwise(written)]
    assert len(steps) > 5  # the rest pose is far from the engaged pose: a move of many ticks
    assert max(steps) == pytest.approx(RAMP_DEG_S / fps, abs=1e-6)  # the largest per-tick step of the move


def _rig_file(tmp_path, fps: int, camera_fps: float):
    rig = {
        "id": "fps_rig",
        "fps": fps,
        "cameras": [{"kind": "virtual", "name": "overhead", "width": 128, "height": 96, "fps": camera_fps}],
        "virtual": {"runtime_dir": str(tmp_path / "run")},
    }
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path


def test_a_30_fps_camera_in_a_60_hz_rig_is_refused_at_parse_time_with_the_fix(tmp_path):
    path = _rig_file(tmp_path, fps=60, camera_fps=30)
    with pytest.raises(UsageError) as refused:
        parse_command(RecordConfig, [f"--config_path={path}"])
    message = str(refused.value)
    assert message.startswith(str(path)), message  # blamed on the file
    assert "fps=60: cameras.overhead at 30 fps cannot feed a 60 Hz control loop" in message
    assert "set the rig's `fps: 30`, or the camera's `fps: 60`" in message
    assert parse_command(RecordConfig, [f"--config_path={_rig_file(tmp_path, 60, 60)}"]).rig.fps == 60


def test_fps_on_the_command_line_overrides_the_rig_file_once_and_is_checked_against_the_cameras(tmp_path):
    path = _rig_file(tmp_path, fps=30, camera_fps=60)
    assert parse_command(RecordConfig, [f"--config_path={path}"]).rig.fps == 30
    assert parse_command(RecordConfig, [f"--config_path={path}", "--rig.fps=60"]).rig.fps == 60
    assert parse_command(RecordConfig, [f"--config_path={path}", "--rig.fps=15"]).rig.fps == 15
    with pytest.raises(UsageError) as refused:
        parse_command(RecordConfig, [f"--config_path={path}", "--rig.fps=45"])
    assert str(refused.value).startswith("the command line (--rig.fps): fps=45: cameras.overhead at 60 fps cannot feed")
    assert "set the rig's `fps: 30`" in str(refused.value)


@pytest.mark.parametrize("fps", [0, 201])
def test_a_rig_rate_out_of_range_is_refused(tmp_path, fps):
    with pytest.raises(UsageError, match=f"fps={fps}: expected a whole number of control ticks a second, 1..200"):
        parse_command(RecordConfig, [f"--config_path={_rig_file(tmp_path, fps, 30)}"])
