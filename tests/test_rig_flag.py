"""A next step printed by a failing robot command repeats the rig file the person gave it."""

import pytest

from robot.cli import run_command
from robot.errors import RobotError
from robot.shell.rig_flag import config_path_of, with_config_path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Next: so101-calibrate --arms=left_follower",
            "Next: so101-calibrate --config_path=my\\ rig.yaml --arms=left_follower",
        ),
        (
            "run so101-doctor, then so101-teleop --duration_s=5",
            "run so101-doctor --config_path=my\\ rig.yaml, "
            "then so101-teleop --config_path=my\\ rig.yaml --duration_s=5",
        ),
        ("so101-doctor --config_path=other.yaml", "so101-doctor --config_path=other.yaml"),  # its own rig file stays
        ("judge them: so101-judge --dataset.root=x", "judge them: so101-judge --dataset.root=x"),  # no rig file
        ("so101-policy-server --port=8080", "so101-policy-server --port=8080"),
    ],
)
def test_each_rig_command_named_gets_the_rig_file_once(text, expected):
    assert with_config_path(text, "my rig.yaml").replace("'my rig.yaml'", "my\\ rig.yaml") == expected


def test_without_a_rig_file_given_the_line_is_unchanged():
    assert with_config_path("Next: so101-calibrate --arms=left_follower", None) == (
        "Next: so101-calibrate --arms=left_follower"
    )


def test_the_last_config_path_wins_as_when_parsed():
    assert config_path_of(["--config_path=a.yaml", "--fps=30", "--config_path", "b.yaml"]) == "b.yaml"
    assert config_path_of(["--fps=30"]) is None


def test_a_failing_command_prints_its_next_step_with_the_rig_file(capsys):
    def body() -> int:
        raise RobotError("left_follower has no calibration. Next: so101-calibrate --arms=left_follower")

    assert run_command(body, args=["--config_path=rigs/lab.yaml", "--duration_s=5"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        "error: left_follower has no calibration. Next: so101-calibrate --config_path=rigs/lab.yaml"
        " --arms=left_follower"
    )
