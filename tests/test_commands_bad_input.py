"""Bad input to the commands: a short, clear error line and exit status 1 (2: a bad rig file), never a traceback."""

import json
import os
from pathlib import Path

import pytest
import yaml

from robot.virtual.client import VirtualRigClient
from tests.support.commands import SimProcess, run, virtual_rig_file

pytestmark = pytest.mark.slow


def real_rig_file(tmp_path: Path, **ports: str) -> Path:
    base = {"left_follower": "/dev/null-1", "right_follower": "/dev/null-2", "left_leader": "", "right_leader": ""}
    path = tmp_path / "real.yaml"
    path.write_text(yaml.safe_dump({"id": "bad", "ports": base | ports, "calibration": {"dir": str(tmp_path)}}))
    return path


def assert_clean_failure(result, *fragments: str, code: int = 1) -> None:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in result.stderr + result.stdout, (fragment, result.stderr, result.stdout)


def test_wrong_port_path(tmp_path):
    rig = real_rig_file(tmp_path, left_follower=str(tmp_path / "ttyUSB7"))
    result = run("so101-calibrate", f"--config_path={rig}", "--arms=left_follower")
    assert_clean_failure(result, "error: left follower on", "ttyUSB7", "no such device", "Next:")


def test_a_port_that_is_not_a_servo_bus(tmp_path):
    master, slave = os.openpty()
    try:
        rig = real_rig_file(tmp_path, left_follower=os.ttyname(slave))
        result = run("so101-calibrate", f"--config_path={rig}", "--arms=left_follower")
    finally:
        os.close(master)
        os.close(slave)
    assert_clean_failure(result, "no servo answered", "power supply")


def test_bad_rig_file(tmp_path):
    path = tmp_path / "rig.yaml"
    path.write_text("id: x\nbus: {read_deadline_ms: fast}\nvirtual: {}\n")
    assert_clean_failure(run("so101-doctor", f"--config_path={path}"), "error:", "read_deadline_ms", code=2)  # usage


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sim")
    rig = virtual_rig_file(folder, calibrated=True, timing="instant")
    process = SimProcess(rig)
    yield rig, VirtualRigClient(Path(process.ready["control"]))
    process.stop()


def test_missing_motor(sim):
    rig, client = sim
    client.unplug("left_follower", 3)
    try:
        result = run("so101-calibrate", f"--config_path={rig}", "--arms=left_follower")
    finally:
        client.replug("left_follower", 3)
    assert_clean_failure(result, "elbow_flex (id 3)", "does not answer", "cable")


def test_model_mismatch(sim):
    rig, client = sim
    client.poke("right_follower", 5, 3, (2825).to_bytes(2, "little"))  # an STS3250
    try:
        result = run("so101-calibrate", f"--config_path={rig}", "--arms=right_follower")
    finally:
        client.power_cycle("right_follower", 5)
        client.poke("right_follower", 5, 3, (777).to_bytes(2, "little"))
    assert_clean_failure(result, "wrist_roll", "not an STS3215", "2825")


def test_unreadable_calibration_file(sim):
    rig, _client = sim
    root = Path(yaml.safe_load(rig.read_text())["calibration"]["dir"])
    doctor = run("so101-doctor", f"--config_path={rig}", "--json=true")  # writes the virtual rig's files
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    broken = root / "teleoperators" / "so_leader" / "e2e_rig_left.json"
    good = broken.read_text()
    broken.write_text(good[: len(good) // 2])
    try:
        result = run("so101-doctor", f"--config_path={rig}", "--json=true")
    finally:
        broken.write_text(good)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    rows = json.loads(result.stdout)
    failed = [r for r in rows if r["status"] == "fail"]
    assert [(r["subject"], r["check"]) for r in failed] == [("left_leader", "calibration")]
    assert "not valid JSON" in failed[0]["detail"]
    assert "so101-calibrate" in failed[0]["next_step"]


def test_release_without_a_terminal_asks_for_yes_and_touches_nothing(tmp_path):
    import subprocess

    from tests.support.commands import script

    rig = real_rig_file(tmp_path)
    result = subprocess.run(
        [script("so101-release"), f"--config_path={rig}"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert_clean_failure(result, "no terminal to ask on", "--yes=true")
    unknown = run("so101-release", f"--config_path={rig}", "--arms=left_fingers", "--yes=true")
    assert_clean_failure(unknown, "left_fingers", "expected all, followers, leaders", code=2)  # a usage error


V21_INFO = '{"codebase_version": "v2.1", "fps": 30, "features": {}}'
V30_INFO = '{"codebase_version": "v3.0", "fps": 30, "features": {}}'


@pytest.mark.parametrize(
    ("files", "fragments"),
    [
        (
            {"meta/info.json": V21_INFO},
            ("codebase_version 'v2.1'", "'v3.0'", "--dataset.root=<new folder>", "convert_dataset_v21_to_v30"),
        ),
        (
            {"meta/info.json": V30_INFO, "meta/so101/journal.json": '{"format": 1, "sta'},
            ("meta/so101/journal.json is not valid", "not valid JSON", "python -m teleop.dataset.adopt --root="),
        ),
    ],
    ids=["another codebase_version", "a truncated journal"],
)
def test_record_refuses_a_dataset_it_cannot_resume_and_changes_nothing(tmp_path, files, fragments):
    import hashlib

    root = tmp_path / "dataset"
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / "data/chunk-000").mkdir(parents=True)
    (root / "data/chunk-000/file-000.parquet").write_bytes(b"an episode")

    def tree() -> dict[str, str]:
        return {
            p.relative_to(root).as_posix(): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
        }

    before = tree()
    rig = virtual_rig_file(tmp_path)
    config = yaml.safe_load(rig.read_text())
    config["cameras"] = [
        {"kind": "virtual", "name": name, "view": name, "width": 64, "height": 48}
        for name in ("left_wrist", "right_wrist", "overhead")
    ]
    rig.write_text(yaml.safe_dump(config))
    result = run(
        "so101-record",
        f"--config_path={rig}",
        "--dataset.repo_id=test/fold",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        "--dataset.resume=true",
    )
    assert_clean_failure(result, "error: Cannot ", "Next:", *fragments)
    assert len([line for line in result.stderr.splitlines() if line.startswith("error:")]) == 1
    assert tree() == before
