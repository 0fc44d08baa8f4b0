"""One controller at a time, and a rig job nobody controls ends in its safe stop (once).

The watch is tested here with a stand-in job (what it does to a job is one call, `interrupt`); the
real commands under a real studio are in test_studio_rig.py.
"""

from pathlib import Path

import pytest

from evaluation.studio.actions import ActionInputError, Place
from evaluation.studio.control import ControlLease
from evaluation.studio.studio import Studio


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def test_the_first_tab_controls_others_watch_until_they_take_over():
    clock = Clock()
    lease = ControlLease(lapse_s=10.0, clock=clock)
    assert lease.claim("A")
    assert not lease.claim("B")  # read-only while A is there
    assert lease.holds("A")
    assert not lease.holds("B")
    assert lease.claim("B", take_over=True)  # asked for, confirmed on the page
    assert not lease.holds("A")
    assert not lease.seen("A")
    lease.release("A")  # a release by a tab that no longer holds control changes nothing
    assert lease.holds("B")
    lease.release("B")
    assert not lease.held
    assert lease.claim("A")


def test_a_controller_that_stops_polling_lapses_and_is_reported_once():
    clock = Clock()
    lease = ControlLease(lapse_s=10.0, clock=clock)
    lease.claim("A")
    clock.now_s += 9.0
    assert lease.seen("A")  # a poll within the lapse keeps it
    clock.now_s += 9.0
    assert lease.lapse() is None
    assert lease.holds("A")
    clock.now_s += 1.5
    assert not lease.holds("A")
    gone = lease.lapse()
    assert gone is not None
    assert gone.tab == "A"
    assert lease.lapse() is None
    assert lease.claim("B")  # free for anyone


class StandInJob:
    number = 1
    line = type("Line", (), {"argv": ("so101-record",)})()

    def __init__(self) -> None:
        self.interrupts = 0

    def interrupt(self) -> None:
        self.interrupts += 1


class StandInBoard:
    def __init__(self, job: StandInJob | None) -> None:
        self.job = job
        self.since_s = 0.0

    def rig_job(self) -> StandInJob | None:
        return self.job

    def interrupt(self) -> None:
        self.interrupts += 1


def _watched(tmp_path: Path, monkeypatch) -> tuple[Clock, StandInJob, ControlLease, Studio]:
    """A studio whose rig job is a stand-in, on a clock the test moves; tab A controls it."""
    clock = Clock()
    monkeypatch.setattr("evaluation.studio.studio.time.monotonic", clock)
    job = StandInJob()
    lease = ControlLease(lapse_s=5.0, clock=clock)
    studio = Studio(Place(tmp_path), lease, StandInBoard(job))  # type: ignore[arg-type]
    assert lease.claim("A")
    return clock, job, lease, studio


def test_the_rig_job_gets_one_ctrl_c_once_no_page_has_controlled_it_for_lapse_s(tmp_path: Path, monkeypatch):
    clock, job, lease, studio = _watched(tmp_path, monkeypatch)
    for _ in range(20):  # polled: nothing happens, however long
        clock.now_s += 1.0
        lease.seen("A")
        studio.watch_once()
    assert job.interrupts == 0
    clock.now_s += 6.0  # the tab closed: its lease lapses ...
    studio.watch_once()
    assert job.interrupts == 0  # ... and the job has lapse_s more before it is stopped
    clock.now_s += 4.9
    studio.watch_once()
    assert job.interrupts == 0
    clock.now_s += 0.2
    studio.watch_once()
    assert job.interrupts == 1
    for _ in range(30):  # never a second Ctrl-C (within 3 s, the command would e-stop)
        clock.now_s += 1.0
        studio.watch_once()
    assert job.interrupts == 1
    assert next(e.text for e in studio.events).startswith("the controlling page stopped answering")
    assert "stopped as Ctrl-C stops it" in studio.events[-1].text


def test_a_reload_within_lapse_s_changes_nothing(tmp_path: Path, monkeypatch):
    clock, job, lease, studio = _watched(tmp_path, monkeypatch)
    clock.now_s += 3.0  # the page reloads: the same tab (sessionStorage) claims again
    assert lease.claim("A")
    clock.now_s += 4.0
    studio.watch_once()
    assert job.interrupts == 0
    assert lease.holds("A")


def test_the_llm_judge_starts_only_after_its_cost_was_estimated_here(tmp_path: Path):
    place = Place(tmp_path / "ws")
    root = place.dataset("fold")
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text('{"total_episodes": 1, "features": {}}')
    studio = Studio(place, ControlLease(lapse_s=5.0))
    with pytest.raises(ActionInputError, match="estimated first"):
        studio.run("judge", {"dataset": "fold", "scorer": "llm"})
    assert studio.board.all() == []  # nothing started, nothing spent


def test_a_dataset_page_that_cannot_be_opened_is_one_line_not_a_crash(tmp_path: Path):
    from fastapi.testclient import TestClient

    from evaluation.studio.app import create_app

    place = Place(tmp_path / "ws")
    broken = place.dataset("broken")
    (broken / "meta").mkdir(parents=True)
    (broken / "meta" / "info.json").write_text("{not json")
    app = create_app(Studio(place, ControlLease(lapse_s=5.0)))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for path, said in (("/datasets/broken/", "info.json"), ("/datasets/missing/", "no dataset 'missing'")):
            answer = client.get(path)
            assert answer.status_code == 404, (path, answer.text)
            assert said in answer.text
            assert answer.text.count("\n") == 1
    app.state.mounts.close()
