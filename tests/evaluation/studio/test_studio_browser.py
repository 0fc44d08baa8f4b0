"""A newcomer's session in so101-studio, in headless Chromium on the virtual rig, every effect read back.

Open the page; run the doctor; record two episodes, re-recording one; replay one on dry arms; deploy
the tiny ACT for one rollout, take over and hand back, score it live; estimate the judge's cost,
then score with the heuristic; override one score with a reason in the dataset's review page and
find it in the audit trail. After each step the test checks what the step left behind (the dataset,
its quality cards, the replay's report, the rollout's intervention frames and live scores, the
evaluation store), not only the page.

With SO101_STUDIO_SCREENSHOTS=<folder>, each panel is saved there as a PNG (the README's pictures).
"""

import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from evaluation.overrides import overrides_of
from evaluation.store import EvaluationStore, default_store_path
from tests.support.commands import sim_client
from tests.support.record_runs import load, rig_file, saved_episodes
from tests.support.review_pages import PageProblems
from tests.support.studio import RECORD_FORM, studio_at

pytestmark = pytest.mark.slow
TIMEOUT_MS = 180_000  # a busy 2-core machine: a recording's episode, a rollout, a judge run
SHOTS = os.environ.get("SO101_STUDIO_SCREENSHOTS", "")


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"studio-{name}.png"), full_page=True)


def _job(page: Page, number: int) -> str:
    return f"#job-{number}"


def _wait_output(page: Page, number: int, text: str) -> None:
    _wait_pattern(page, number, re.escape(text))


def _wait_pattern(page: Page, number: int, pattern: str) -> None:
    """Wait until the job's output on the page matches `pattern` (across lines)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    box = page.locator(f"#job-{number}")
    while not re.search(pattern, text := box.locator("pre").inner_text(), re.DOTALL):
        ended = box.get_attribute("data-running") == "false"
        # The page's answer to the last button pressed, and the studio's events (each key typed).
        said = f"{page.locator('#message').inner_text()} | {page.locator('#events').inner_text()[-600:]}"
        assert not ended, f"job {number} ended with no {pattern!r} in its output (page: {said!r}): {text[-3000:]}"
        assert time.monotonic() < deadline, f"no {pattern!r} in job {number}'s output (page: {said!r}): {text[-3000:]}"
        time.sleep(0.3)


def _wait_recording(page: Page, number: int, episode: str, after: str = "") -> None:
    """Wait until the job's latest status line, printed after `after`, says `episode` has recorded a second.

    A key like r acts only on an episode being recorded (in the ready phase, before the leaders
    engage, it does nothing; in a reset, n starts the next take early), and a status line is
    redrawn in place: only the latest one says what the session is doing now.
    """
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    box = page.locator(f"#job-{number}")
    while True:
        text = box.locator("pre").inner_text()
        if after:  # only what was printed after it (nothing yet, if it has not been printed)
            text = text.rsplit(after, 1)[-1] if after in text else ""
        lines = [line for line in text.splitlines() if line.strip()]
        found = re.search(rf"episode {re.escape(episode)} REC\s+(\d+\.\d)/", lines[-1] if lines else "")
        if found and float(found.group(1)) >= 1.0:
            return
        assert box.get_attribute("data-running") != "false", f"job {number} ended before {episode} recorded"
        assert time.monotonic() < deadline, f"episode {episode} not recording in job {number}: {lines[-20:]}"
        time.sleep(0.3)


def _wait_exit(page: Page, number: int) -> int:
    box = page.locator(_job(page, number))
    expect(box).to_have_attribute("data-running", "false", timeout=TIMEOUT_MS)
    return int(box.get_attribute("data-exit") or -1)


def _start(page: Page, action: str, fields: dict[str, str]) -> int:
    """Fill a form, check the command line shown beside it, press its button; the new job's number."""
    form = page.locator(f"form[data-action={action}]")
    for name, value in fields.items():
        field = form.locator(f"[name={name}]")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        elif field.get_attribute("type") != "hidden":
            field.fill(value)
    command = page.locator(f"[data-command-for={action}]")
    page.wait_for_selector(f"[data-command-for={action}]:not([data-pending])", state="attached", timeout=10_000)
    assert command.get_attribute("title") == "", command.get_attribute("title")  # the form's refusal, if any
    before = page.locator(".job").count()
    form.locator("button[type=submit]").click()
    expect(page.locator(".job")).to_have_count(before + 1, timeout=30_000)
    number = int((page.locator(".job").first.get_attribute("id") or "job-0").removeprefix("job-"))
    shown = page.locator(f"{_job(page, number)} code.command").inner_text()
    assert shown == command.inner_text(), (shown, command.inner_text())  # the job runs the line shown
    return number


def _panel(page: Page, name: str) -> None:
    page.click(f"nav button[data-panel={name}]")
    expect(page.locator(f"#panel-{name}")).to_be_visible()


def test_a_newcomer_records_replays_deploys_judges_and_overrides_in_one_page(
    browser: Browser, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
):
    from policies.testing.tiny_policies import write_tiny_act

    checkpoint = write_tiny_act(tmp_path_factory.mktemp("tiny_act") / "checkpoint", chunk_size=10)
    rig = rig_file(tmp_path)
    workspace = tmp_path / "ws"
    demonstrations, rollouts = workspace / "datasets" / "fold", workspace / "datasets" / "eval"
    problems = PageProblems()
    with sim_client(rig), studio_at(workspace, rig) as (_studio, url):
        page = problems.watch(browser.new_page(viewport={"width": 1400, "height": 1000}))
        elsewhere: list[str] = []  # the page works with no internet: nothing but the studio is ever asked
        page.on("request", lambda r: None if r.url.startswith((url, "data:", "blob:")) else elsewhere.append(r.url))
        page.goto(f"{url}/")
        expect(page.locator("#control-state")).to_have_text("you control the studio")

        # The rig: the doctor's rows, each with its status.
        doctor = _start(page, "doctor", {})
        assert _wait_exit(page, doctor) == 0
        rows = page.locator("#doctor-rows tbody tr")
        expect(rows.first).to_be_visible(timeout=10_000)
        statuses = {rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())}
        assert statuses <= {"pass", "warn"}, statuses
        assert page.locator("#doctor-rows td", has_text="left_follower").count() > 0
        arms = page.locator("#arm-summary tbody tr")
        expect(arms).to_have_count(4)  # each arm: its port, torque, temperature and supply voltage
        follower = page.locator("#arm-summary tr[data-arm=left_follower] td")
        assert follower.nth(1).inner_text().endswith("left_follower")  # the virtual rig's pseudo-terminal
        assert follower.nth(2).inner_text().startswith(("on", "off"))
        assert " C" in follower.nth(3).inner_text()
        assert " V " in follower.nth(4).inner_text()
        _shot(page, "rig")

        # Record two episodes; the first take of episode 1 is re-recorded.
        _panel(page, "record")
        record = _start(page, "record", RECORD_FORM | {"episodes": "2"})
        expect(page.locator("#live-record img").first).to_be_visible(timeout=TIMEOUT_MS)  # the cameras, live
        _wait_recording(page, record, "1/2")
        page.click("#panel-record button[data-key=rerecord]")
        _wait_recording(page, record, "1/2", after="episode 0 discarded: it will be recorded again")  # a new take
        page.click("#panel-record button[data-key=next]")  # save episode 1
        expect(page.locator("#record-counter")).to_have_text("1", timeout=TIMEOUT_MS)
        _wait_recording(page, record, "2/2")
        _shot(page, "record")
        page.click("#panel-record button[data-key=next]")  # save episode 2: the session is done
        assert _wait_exit(page, record) == 0
        expect(page.locator("#record-counter")).to_have_text("2", timeout=10_000)
        expect(page.locator("#record-cards tbody tr")).to_have_count(2)
        assert saved_episodes(demonstrations) == 2
        dataset = load(demonstrations)
        assert dataset.meta.total_episodes == 2
        lengths = [int(e["length"]) for e in dataset.meta.episodes]
        assert all(0 < n < 20 * 30 for n in lengths), (lengths, page.locator(f"{_job(page, record)} pre").inner_text())

        # Replay episode 0 on dry arms.
        _panel(page, "datasets")
        page.select_option("#dataset-picker", "fold")
        replay = _start(page, "replay", {"episode": "0"})
        assert _wait_exit(page, replay) == 0
        reports = list((workspace / "replays").glob("fold-episode0*/**/*"))
        assert reports, "the dry replay wrote no report"

        # Deploy the tiny ACT for one rollout: take over, hand back, score it live.
        _panel(page, "deploy")
        deploy = _start(
            page,
            "deploy",
            {
                "checkpoint": str(checkpoint),
                "dataset": "eval",
                "episodes": "1",
                "episode_s": "8",
                "reset_s": "0.5",
                "vcodec": "h264",
                "operator": "ana",
                "more": "--policy.device=cpu",
            },
        )
        _wait_pattern(page, deploy, r"fits\s+the\s+rig")  # the contract, checked before any weight loaded:
        assert "REC" not in page.locator(f"{_job(page, deploy)} pre").inner_text()  # before any rollout
        _wait_output(page, deploy, "REC")
        page.click("#panel-deploy button[data-key=take_over]")
        _wait_output(page, deploy, "you have the arms")
        page.click("#panel-deploy button[data-key=take_over]")
        _wait_output(page, deploy, "the policy has the arms again")
        for criterion, level in (("R1", "score_1"), ("R2", "score_half"), ("R3", "score_0")):
            _wait_output(page, deploy, f"score {criterion} of rollout")
            expect(page.locator("#score-asked")).to_have_text(f"{criterion} of rollout 0")
            page.click(f"#panel-deploy button[data-key={level}]")
        _shot(page, "deploy")
        assert _wait_exit(page, deploy) == 0
        rollout = load(rollouts)
        assert rollout.meta.total_episodes == 1
        assert np.array(rollout.hf_dataset["intervention"]).astype(bool).any()  # the person's frames are marked
        live = [json.loads(p.read_text()) for p in rollouts.glob("meta/so101/live_scores/*.json")]
        assert [(s["operator"], s["scores"]) for s in live] == [("ana", {"R1": 1.0, "R2": 0.5, "R3": 0.0})]

        # The judge: the dry run's cost estimate first, then the heuristic's scores.
        _panel(page, "datasets")
        page.select_option("#dataset-picker", "fold")  # the one picker: the judge's forms take its dataset
        _panel(page, "judge")
        estimate = _start(page, "judge_estimate", {})
        assert _wait_exit(page, estimate) == 0
        assert "$" in page.locator(f"{_job(page, estimate)} pre").inner_text()
        judge = _start(page, "judge", {"scorer": "heuristic"})
        assert _wait_exit(page, judge) == 0
        _shot(page, "judge")
        with EvaluationStore(default_store_path(demonstrations)) as store:
            scored = store.query("SELECT DISTINCT episode_index FROM latest_episode_results ORDER BY 1")
        assert [r["episode_index"] for r in scored] == [0, 1]

        # The dataset's review page, in the same app: override one score with a reason; the audit trail.
        _panel(page, "datasets")
        _shot(page, "datasets")
        with page.expect_navigation():
            page.click("#open-review")
        page.click("#episode-0 a")
        page.wait_for_url("**/datasets/fold/episodes/0")
        form = page.locator("form.override").first
        criterion = (form.get_attribute("id") or "override-R1").removeprefix("override-")
        form.locator("input[name=score][value='1']").check()
        form.locator("select[name=reason]").select_option("view_ambiguous")
        form.locator("textarea[name=note]").fill("the fold is visible from overhead")
        with page.expect_navigation():
            form.locator("button[type=submit]").click()
        entries = page.locator(f"#trail-{criterion} tr.trail-entry")
        expect(entries).to_have_count(1)
        assert "the fold is visible from overhead" in entries.inner_text()
        assert "tester" in entries.inner_text()
        _shot(page, "review")
        assert problems.errors == [], "\n".join(sorted(set(problems.errors)))
        assert elsewhere == []
        page.close()
    with EvaluationStore(default_store_path(demonstrations)) as store:
        history = overrides_of(store, "fold")
    assert [(o.episode_index, o.criterion, o.new_score, o.reason, o.reviewer) for o in history] == [
        (0, criterion, 1.0, "view_ambiguous", "tester")
    ]
