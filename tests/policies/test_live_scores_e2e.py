"""Live scores typed at the end of each rollout, blind: so101-deploy, then so101-judge and so101-report.

On the command's terminal, as an operator would: rollout 0 is scored R1=1, R2=½, R3=0 with the
keys 1, h, 0; rollout 1 is skipped with s. The next rollout waits for its score. The screen never
names the checkpoint (`--policy.blind_label=B`). Then the heuristic judge (offline) scores both
rollouts, and the report counts the operator's scores as human labels in its agreement table.
"""

import json
from pathlib import Path

import pytest

from tests.support.commands import ForegroundJob, run
from tests.support.record_runs import rig_file
from tests.support.terminal_keys import plain, press

pytestmark = pytest.mark.slow


def said(job: ForegroundJob, text: str, timeout_s: float) -> None:
    """Until the terminal shows `text` (colours and line wraps aside)."""
    job.wait_until(lambda: text in plain(job.text), timeout_s, repr(text))


def test_scores_typed_at_the_end_of_rollouts_are_human_labels_in_the_report(tmp_path: Path, tiny_act_dir: Path):
    root = tmp_path / "eval"
    args = [
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={tiny_act_dir}",
        "--policy.device=cpu",
        "--policy.blind_label=B",
        "--dataset.repo_id=test/live",
        f"--dataset.root={root}",
        "--dataset.vcodec=h264",
        "--session.num_episodes=2",
        "--session.episode_s=2",
        "--session.reset_s=0.5",
        "--live_scores.enabled=true",
        "--live_scores.operator=ana",
    ]
    with ForegroundJob("so101-deploy", *args, terminal=True) as job:
        said(job, "score R1 of rollout 0", 240)
        assert "episode 2/2 REC" not in plain(job.text), "the next rollout started before the score"
        for key, asked in (("1", "score R2 of rollout 0"), ("h", "score R3 of rollout 0"), ("0", "R1=1 R2=0.5 R3=0")):
            press(job, key)
            said(job, asked, 60)
        said(job, "score R1 of rollout 1", 240)
        press(job, "s")
        said(job, "rollout 1: skipped", 60)
        code = job.finish()
        assert code == 0, plain(job.text)[-3000:]
        assert str(tiny_act_dir) not in job.text, "a blind rollout named its checkpoint"
        assert "policy B fits the rig" in plain(job.text)
    scored = json.loads((root / "meta" / "so101" / "live_scores" / "episode-000000.json").read_text())
    assert (scored["operator"], scored["scores"], scored["skipped"]) == (
        "ana",
        {"R1": 1.0, "R2": 0.5, "R3": 0.0},
        False,
    )
    assert json.loads((root / "meta" / "so101" / "live_scores" / "episode-000001.json").read_text())["skipped"]
    judged = run("so101-judge", f"--dataset.root={root}", "--scorer=heuristic", timeout_s=300)
    assert judged.returncode == 0, judged.stdout[-2000:] + judged.stderr[-2000:]
    out = tmp_path / "report"
    reported = run("so101-report", f"--datasets=[{root}]", f"--output_dir={out}", timeout_s=300)
    assert reported.returncode == 0, reported.stdout[-2000:] + reported.stderr[-2000:]
    [policy] = json.loads((out / "report.json").read_text())["policies"]
    agreement = {row["label"]: row for row in policy["agreement"]}
    # Rollout 0's scores pair with the heuristic judge's exactly where it scored (rollout 1 was skipped:
    # no pair). Which criteria it scores depends on the motion recorded (it abstains on thin evidence,
    # more often on a loaded machine), so the expectation is read from the report, not fixed.
    [first] = [e for e in policy["episodes"] if e["episode_index"] == 0]
    judged_criteria = {c for c, cell in first["criteria"].items() if cell["unadjusted"]["score"] is not None}
    assert judged_criteria, "the heuristic judge scored nothing on rollout 0"
    assert {c: agreement[c]["n"] for c in ("R1", "R2", "R3")} == {
        c: int(c in judged_criteria) for c in ("R1", "R2", "R3")
    }, agreement
    cell = policy["episodes"][0]["criteria"]["R2"]
    assert (cell["override"]["reviewer"], cell["override"]["reason"], cell["effective"]["score"]) == (
        "ana",
        "live",
        0.5,
    )
