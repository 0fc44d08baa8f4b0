"""so101-studio driving the real commands on the virtual rig: the e-stop button, a second tab, a closed page.

Each test serves the studio, starts so101-sim for the rig (so the followers can be read after the
command is gone, and the bus trace shows every goal they were sent), and drives the page's
requests as a browser tab makes them. The commands are the real console scripts on pseudo-terminals.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.bus_trace import check_frozen
from tests.support.commands import script, sim_client
from tests.support.record_runs import load, rig_file, saved_episodes
from tests.support.studio import RECORD_FORM, Tab, studio_at

pytestmark = pytest.mark.slow


def test_the_e_stop_button_of_a_read_only_tab_freezes_the_followers_and_that_tab_can_start_nothing(tmp_path: Path):
    rig = rig_file(tmp_path)
    with sim_client(rig) as client, studio_at(tmp_path / "ws", rig) as (studio, url):
        first, second = Tab(url, "first"), Tab(url, "second")
        assert first.post("/control").json() == {"controlling": True}
        assert second.post("/control").json() == {"controlling": False}  # read-only until it takes over
        refused = second.post("/actions/record", RECORD_FORM | {"episodes": "3"})
        assert refused.status_code == 403
        assert "read-only" in refused.json()["error"]
        assert studio.board.all() == []  # nothing started
        started = first.post("/actions/record", RECORD_FORM | {"episodes": "3"})
        assert started.status_code == 200, started.text
        job = studio.board.get(started.json()["job"])
        assert job is not None
        first.watch(job, lambda text: "episode 1/3 REC" in text, 120, "episode 1 recording")
        for path, body in ((f"/jobs/{job.number}/keys", {"key": "next"}), (f"/jobs/{job.number}/stop", None)):
            assert second.post(path, body).status_code == 403, path
        assert second.post("/actions/doctor").status_code == 403
        assert first.post("/actions/doctor").status_code == 409  # the recording holds the rig
        time.sleep(1.0)  # the operator's hands move the leaders: the followers follow
        client.trace_clear()
        pressed = second.post("/estop")  # any page may press it
        assert pressed.status_code == 200, pressed.text
        assert job.wait(120) == 1, job.text()[-3000:]
        assert "stopped by followers frozen: e-stop" in " ".join(job.text().split())
        check_frozen(client)  # the goal written is the pose read in the same tick, and nothing after it
        assert saved_episodes(tmp_path / "ws" / "datasets" / "fold") == 0  # the episode in progress is not kept
        assert second.post("/estop").status_code == 409  # nothing drives the arms now


def test_closing_the_page_mid_episode_keeps_every_saved_episode_and_discards_the_one_in_progress(tmp_path: Path):
    rig = rig_file(tmp_path)
    root = tmp_path / "ws" / "datasets" / "fold"
    with sim_client(rig), studio_at(tmp_path / "ws", rig, lapse_s=2.0) as (studio, url):
        page = Tab(url, "page")
        assert page.post("/control").json() == {"controlling": True}
        # Episode 1 ends by its length (no key: a key's way to the command is the e-stop test's subject).
        form = RECORD_FORM | {"episodes": "3", "episode_s": "8"}
        job = studio.board.get(page.post("/actions/record", form).json()["job"])
        assert job is not None
        page.watch(job, lambda text: "episode 2/3 REC" in text, 180, "episode 2 recording")
        assert saved_episodes(root) == 1
        reopened = Tab(url, "page")  # a reload: the same tab id (sessionStorage), a new page
        assert reopened.post("/control").json() == {"controlling": True}
        assert reopened.state()["rig_job"] == job.number  # reattached: the recording runs on
        # The page closes: no more polls. lapse_s (2 s) later, well inside episode 2's 8 s, the recording
        # gets Ctrl-C, its safe stop.
        assert job.wait(60) == 130, job.text()[-3000:]
    assert any("stopped as Ctrl-C stops it" in e.text for e in studio.events)
    assert saved_episodes(root) == 1  # episode 1 kept, episode 2 (in progress) discarded as Ctrl-C does
    assert load(root).meta.total_episodes == 1  # and LeRobot loads what is there


@pytest.mark.parametrize("signum", [signal.SIGHUP])  # a dropped SSH link; SIGTERM and SIGINT take the same handler
def test_a_signal_to_so101_studio_stops_its_recording_as_ctrl_c_does(tmp_path: Path, signum: int):
    rig = rig_file(tmp_path)
    workspace = tmp_path / "ws"
    with sim_client(rig):
        studio = subprocess.Popen(
            [script("so101-studio"), f"--config_path={rig}", f"--workspace={workspace}", "--server.port=0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=os.environ | {"COLUMNS": "200"},
        )
        try:
            assert studio.stdout is not None
            said = ""
            while not (found := re.search(r"studio: (http://127\.0\.0\.1:\d+)/", said)) and studio.poll() is None:
                said += studio.stdout.readline()
            assert found, said
            page = Tab(found.group(1), "page")
            assert page.post("/control").json() == {"controlling": True}
            started = page.post("/actions/record", RECORD_FORM | {"episodes": "2"})
            assert started.status_code == 200, started.text
            deadline = time.monotonic() + 120
            while not any("episode 1/2 REC" in text for text in page.state()["jobs"][0]["lines"]):
                assert time.monotonic() < deadline, page.state()["jobs"][0]["lines"]
                time.sleep(0.3)
            studio.send_signal(signum)
            output, _ = studio.communicate(timeout=90)
        finally:
            if studio.poll() is None:
                studio.kill()
    assert studio.returncode == 0, output
    assert "job 1 (so101-record) stopped by Ctrl-C: exit 130" in " ".join(output.split()), output
    assert not (workspace / "datasets" / "fold").exists()  # no episode saved: the new dataset is removed
