"""Three silent data bugs a conversion script makes, each caught before training in one line naming its episode.

The clean dataset is a two-arm recording whose arms take turns, filmed by the virtual rig's own
renderer (tests/support/two_arm_recording.py: the scripted demonstration mirrors the arms in step,
which hides a camera swap from any check). Each corrupted copy is made as a buggy script would
(tests/support/dataset_corruptions.py): actions shifted 3 frames either way, the state's left and
right blocks swapped, the two wrist videos swapped. Our recordings keep the rig's own log beside
the data, which makes the first two exact; without it (someone else's dataset) the signals decide.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluation.commands.review import main
from evaluation.episode_source import open_dataset
from evaluation.review.health import HealthReport, dataset_health
from robot.shell.exit_codes import Exit
from teleop.dataset.sidecar import SO101_DIR
from tests.support.dataset_corruptions import Corruption, corrupted_copy
from tests.support.two_arm_recording import EPISODES, write_two_arm_recording

ALIGNMENT_CHECKS = ("action_lag", "state_sides", "camera_sides")
Corrupt = Callable[..., Path]


@pytest.fixture(scope="session")
def two_arm_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clean two-arm recording (read-only)."""
    return write_two_arm_recording(tmp_path_factory.mktemp("two_arm") / "two_arm")


@pytest.fixture(scope="session")
def corrupt(two_arm_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Corrupt:
    """`corrupt(corruption, with_log=True)`: a copy of the clean recording with that bug (None: none), made once."""
    made: dict[tuple[Corruption | None, bool], Path] = {}

    def make(corruption: Corruption | None, with_log: bool = True) -> Path:
        if (corruption, with_log) not in made:
            target = tmp_path_factory.mktemp(corruption or "clean") / "two_arm"
            root = (
                corrupted_copy(two_arm_root, target, corruption)
                if corruption
                else shutil.copytree(two_arm_root, target)
            )
            if not with_log:  # someone else's dataset: no rig log beside it
                shutil.rmtree(root / SO101_DIR)
            made[corruption, with_log] = root
        return made[corruption, with_log]

    return make


def _errors(report: HealthReport, check: str) -> list[str]:
    found = [f for f in report.of(check) if f.severity == "error"]
    assert all(f.episode_index is not None and "\n" not in f.detail for f in found), found
    assert all(f.detail.startswith(f"episode {f.episode_index}: ") for f in found), found
    return [f.detail for f in found]


def _health(root: Path) -> HealthReport:
    return dataset_health(open_dataset(root))


@pytest.mark.parametrize("with_log", [True, False])
def test_the_clean_recording_passes_each_check_on_every_episode(corrupt: Corrupt, with_log: bool):
    report = _health(corrupt(None, with_log=with_log))
    assert report.count("error") == 0, report.findings
    for check in ALIGNMENT_CHECKS:
        summary = next(c for c in report.checks if c.check == check)
        assert [f for f in report.of(check) if f.severity != "info"] == []
        assert summary.checked == summary.passed == EPISODES, (check, report.of(check))
    (lag,) = next(c for c in report.checks if c.check == "action_lag").notes
    if with_log:
        assert lag == f"{EPISODES} episodes compared frame by frame with the rig's own log"
    else:  # measured from the signals: the followers trail by ~3.9 frames, within the 6 allowed
        assert lag.startswith("state trails action by 3.9 frames (130 ms) in the median episode"), lag


@pytest.mark.parametrize(
    ("corruption", "said"), [(Corruption.ACTION_AHEAD, "ahead of"), (Corruption.ACTION_BEHIND, "behind")]
)
def test_actions_shifted_3_frames_are_an_error_on_every_episode_by_the_rig_log(corrupt: Corrupt, corruption, said):
    report = _health(corrupt(corruption))
    details = _errors(report, "action_lag")
    assert len(details) == EPISODES, report.findings
    shift = "+3" if said == "ahead of" else "-3"
    for detail in details:
        assert f"action is {said} observation.state by 3 frames" in detail
        assert f"what the rig sent at frame t{shift}" in detail
        assert detail.endswith(f"then run so101-review --dataset.root={corrupt(corruption)} --check=true")
    assert _errors(report, "state_sides") == _errors(report, "camera_sides") == []


@pytest.mark.parametrize(
    ("corruption", "said"), [(Corruption.ACTION_AHEAD, "early"), (Corruption.ACTION_BEHIND, "late")]
)
def test_shifted_actions_are_found_from_the_signals_without_the_log(corrupt: Corrupt, corruption, said):
    report = _health(corrupt(corruption, with_log=False))
    details = _errors(report, "action_lag")
    assert len(details) == EPISODES, report.findings
    assert all(f"action looks {said} against the state; actions shifted against the observations" in d for d in details)
    assert _errors(report, "state_sides") == []


@pytest.mark.parametrize("with_log", [True, False])
def test_swapped_state_blocks_are_an_error_on_every_episode(corrupt: Corrupt, with_log: bool):
    report = _health(corrupt(Corruption.STATE_SIDES, with_log=with_log))
    details = _errors(report, "state_sides")
    assert len(details) == EPISODES, report.findings
    evidence = "what the rig logged for the right arm" if with_log else "from the right arm's actions"
    for detail in details:
        assert "observation.state's left and right arm blocks are swapped against action" in detail
        assert evidence in detail
    assert _errors(report, "action_lag") == _errors(report, "camera_sides") == []


def test_swapped_wrist_videos_are_an_error_naming_both_cameras(corrupt: Corrupt):
    report = _health(corrupt(Corruption.CAMERA_SIDES))
    details = _errors(report, "camera_sides")
    assert len(details) == EPISODES, report.findings
    assert all("the left_wrist and right_wrist videos look swapped" in d for d in details)
    assert _errors(report, "action_lag") == _errors(report, "state_sides") == []


def test_mirrored_arms_raise_no_alarm_and_the_camera_check_says_it_could_not_tell(dataset_root: Path):
    report = _health(dataset_root)  # the synthetic dataset: mirrored arms in step, every view alike
    assert [f for check in ALIGNMENT_CHECKS for f in report.of(check) if f.severity != "info"] == []
    (remark,) = report.of("camera_sides")
    assert (remark.severity, remark.episode_index) == ("info", None)
    assert remark.detail.startswith("no episode could tell the wrist cameras apart")


def test_the_check_mode_prints_one_line_per_finding_and_exits_1_on_errors(corrupt: Corrupt, two_arm_root, capsys):
    broken = corrupt(Corruption.STATE_SIDES)
    assert main([f"--dataset.root={broken}", "--check=true"]) == Exit.FAILED
    lines = capsys.readouterr().out.splitlines()
    swapped = [line for line in lines if line.startswith("error [state_sides] episode ")]
    assert len(swapped) == EPISODES, lines
    assert lines[-1].startswith(f"{broken}: {EPISODES} episodes")
    assert "fix the errors before lerobot-train" in lines[-1]

    assert main([f"--dataset.root={two_arm_root}", "--check=true"]) == Exit.DONE
    lines = capsys.readouterr().out.splitlines()
    assert not [line for line in lines if line.startswith("error ")], lines
    assert " 0 errors, 0 warnings, " in lines[-1], lines
    assert lines[-1].endswith("no errors: ready for lerobot-train"), lines


def test_the_check_mode_fails_in_one_line_on_a_folder_that_is_no_dataset(tmp_path: Path, capsys):
    assert main([f"--dataset.root={tmp_path}", "--check=true"]) == Exit.FAILED
    assert capsys.readouterr().err.startswith(f"error: {tmp_path} is not a LeRobot dataset")
