"""Broken or foreign datasets: so101-replay says what is wrong in one line, exits 1, and replays nothing.

Each case damages a private copy of the session's recording the way a real dataset goes wrong (a
video lost or cut short in a copy, info.json edited by hand, an older LeRobot format). The cases
call the command's `main(argv)` in this process, which is what the `so101-replay` script runs
(sys.exit(main())), so they cost no interpreter start each (about 8 s on 2 cores). An exception
escaping `main` would fail the test itself; what is checked is that the refusal is one line.
"""

from collections.abc import Callable
from pathlib import Path

import pytest

from policies.commands.replay import main
from tests.support.dataset_files import edit_info
from tests.support.recordings import Recording

OVERHEAD_VIDEO = Path("videos/observation.images.overhead/chunk-000/file-000.mp4")


def remove_video(root: Path) -> None:
    (root / OVERHEAD_VIDEO).unlink()


def corrupt_video(root: Path) -> None:
    """Zero the first half of the file (its header and the start of its frames), as a failed copy would."""
    path = root / OVERHEAD_VIDEO
    data = bytearray(path.read_bytes())
    data[: len(data) // 2] = bytes(len(data) // 2)
    path.write_bytes(bytes(data))


def action_shape(root: Path) -> None:
    edit_info(root, lambda info: info["features"]["action"].update(shape=[14]))


def camera_shape(root: Path) -> None:
    edit_info(root, lambda info: info["features"]["observation.images.overhead"].update(shape=[480, 640, 3]))


def older_format(root: Path) -> None:
    edit_info(root, lambda info: info.update(codebase_version="v2.1"))


CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "missing video": (remove_video, ("camera 'overhead'", str(OVERHEAD_VIDEO), "is missing", "Next:")),
    "corrupt video": (corrupt_video, ("camera 'overhead'", str(OVERHEAD_VIDEO), "corrupt", "Next:")),
    "wrong action shape": (action_shape, ("feature 'action' has shape [14] but 12 names", "Next: fix meta/info.json")),
    "wrong camera shape": (camera_shape, ("camera 'overhead'", "declares 640x480", "holds 128x96", "[96, 128, 3]")),
    "older format": (older_format, ("format v2.1", "reads v3.0", "convert_dataset_v21_to_v30")),
}


VIDEO_CASES = ("missing video", "corrupt video")  # refused when a policy needs the frames; else named


def refused(
    capsys: pytest.CaptureFixture[str], recording: Recording, root: Path, out: Path, *extra: str
) -> tuple[int, str, str]:
    args = [f"--config_path={recording.rig_file}", f"--dataset.root={root}", f"--report.output_dir={out}", *extra]
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_broken_dataset_is_refused_with_the_problem_named(
    case: str, dataset_copy: Path, recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    damage, fragments = CASES[case]
    damage(dataset_copy)
    policy = ["--policy.path=recorded"] if case in VIDEO_CASES else []  # the frames are observations then
    code, out, err = refused(capsys, recording, dataset_copy, tmp_path / "report", *policy)
    assert code == 1
    [line] = [line for line in err.splitlines() if line.startswith("error: ")]
    for fragment in fragments:
        assert fragment in line, line
    assert "Traceback" not in out + err
    assert "replaying" not in out  # refused before anything was sent anywhere
    assert not (tmp_path / "report").exists()


@pytest.mark.slow
@pytest.mark.parametrize("case", VIDEO_CASES)
def test_a_replay_of_the_actions_needs_no_video_and_names_the_lost_one(
    case: str, dataset_copy: Path, recording: Recording, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    CASES[case][0](dataset_copy)
    code, out, err = refused(capsys, recording, dataset_copy, tmp_path / "report")
    out = " ".join(out.split())
    assert code == 0, out + err
    assert "1 video file(s) missing or unreadable: not needed to replay the actions" in out
    assert str(OVERHEAD_VIDEO) in out
    assert (tmp_path / "report" / "report.json").is_file()
