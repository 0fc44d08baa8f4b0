"""From the box to a first recording, on the virtual rig in its factory state, through the real commands.

Brand-new arms: every motor answers as ID 1 and the four USB adapters are unplugged, with anonymous
ttyACM<n> names in a seeded order. The person (the virtual rig's hands) plugs each adapter in when
so101-ports asks, connects one motor at a time when so101-setup asks, moves the arms for
so101-calibrate and the leaders during teleop and recording; so101-cameras lists the three cameras
with a contact sheet and writes their roles into the rig file.
"""

import json

import pytest
import yaml

from tests.support.commands import SimProcess, run
from tests.support.record_runs import record_args, saved_episodes
from tests.support.rig_files import rig_yaml

pytestmark = pytest.mark.slow


def _factory_rig(tmp_path):
    path = rig_yaml(tmp_path, rig_id="box")
    rig = yaml.safe_load(path.read_text())
    rig["virtual"] = {"runtime_dir": str(tmp_path / "run"), "timing": "instant", "factory_new": True}
    path.write_text(yaml.safe_dump(rig, sort_keys=False))
    return path


def _ok(result, what: str) -> str:
    assert result.returncode == 0, f"{what}: exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def test_from_the_box_to_a_first_recording(tmp_path):
    rig = _factory_rig(tmp_path)
    flag = f"--config_path={rig}"
    with SimProcess(rig) as sim:
        truth = sim.ready["ports"]  # which anonymous port the emulator gave each arm
        assert sorted(truth.values()) == [str(tmp_path / "run" / f"ttyACM{n}") for n in range(4)]

        before = run("so101-doctor", flag, "--json=true", "--dataset.vcodec=h264", timeout_s=300)
        assert before.returncode == 1
        port_rows = [row for row in json.loads(before.stdout) if row["check"] == "port"]
        assert len(port_rows) == 4
        assert all("no such device" in row["detail"] for row in port_rows)

        _ok(run("so101-ports", flag, "--write=true", timeout_s=300), "so101-ports")
        assert yaml.safe_load(rig.read_text())["ports"] == truth  # every arm found on its own port
        assert "factory_new: true" in rig.read_text()  # the rest of the rig file kept

        factory = run("so101-doctor", flag, "--json=true", "--dataset.vcodec=h264", timeout_s=300)
        motors = [row for row in json.loads(factory.stdout) if row["check"] == "motors"]
        assert len(motors) == 4
        assert all("factory-fresh" in row["detail"] for row in motors)
        assert {row["next_step"] for row in motors} == {
            f"give each motor its id: so101-setup --arms={arm}" for arm in truth
        }

        setup = _ok(run("so101-setup", flag, timeout_s=600), "so101-setup")
        assert setup.count("motors 1-6 answer at 1 Mbps") == 4
        again = run("so101-setup", flag, "--arms=left_leader", timeout_s=120)
        assert again.returncode == 1
        assert "already answers as a set-up chain" in again.stderr

        sheet = tmp_path / "cameras.png"
        cameras = _ok(run("so101-cameras", flag, f"--contact_sheet={sheet}", timeout_s=300), "so101-cameras")
        assert f"contact sheet: {sheet}" in " ".join(cameras.split())
        assert sheet.stat().st_size > 0
        roles = "--roles=left_wrist=0,right_wrist=1,overhead=2"
        _ok(
            run("so101-cameras", flag, f"--contact_sheet={sheet}", roles, "--write=true", timeout_s=300),
            "so101-cameras --write=true",
        )
        written = yaml.safe_load(rig.read_text())
        assert [c["name"] for c in written["cameras"]] == ["left_wrist", "right_wrist", "overhead"]
        assert written["ports"] == truth  # the ports so101-ports wrote are kept

        _ok(run("so101-calibrate", flag, timeout_s=600), "so101-calibrate")
        doctor = run("so101-doctor", flag, "--json=true", "--dataset.vcodec=h264", timeout_s=300)
        rows = json.loads(doctor.stdout)
        assert [r for r in rows if r["status"] == "fail"] == [], doctor.stdout
        assert doctor.returncode == 0

        _ok(run("so101-teleop", flag, "--duration_s=5", "--virtual_operator=cloth_fold", timeout_s=300), "so101-teleop")
        _ok(run("so101-record", *record_args(tmp_path, rig, "--session.num_episodes=1"), timeout_s=600), "so101-record")
    assert saved_episodes(tmp_path / "dataset") == 1
