"""An override made before its episode was re-recorded: stale on the review page and in the report, never applied."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from evaluation.commands.report import main as report_main
from evaluation.overrides import overrides_of
from evaluation.store import EvaluationStore, default_store_path
from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import Scenario
from tests.evaluation.review.currency_testkit import judge, rerecord, small_dataset
from tests.support.review_pages import override_csrf
from tests.support.review_server import serving

JUDGED = {0: (1, 1, 1), 1: (0, 0, 0), 2: (1, 1, 0)}  # what the judge answers for the first recording
REJUDGED_1 = (0.5, 0, 0)  # and for episode 1 once it is recorded again
RERECORDED = (Scenario.FOLD_AND_PUSH, Scenario.GRASP_ONLY, Scenario.FOLD_NO_PUSH)  # episode 1 differs


def _effective(page: str, criterion: str) -> tuple[str, str]:
    """(source, score) of a criterion's effective score on an episode page."""
    section = re.search(
        rf'id="criterion-{criterion}".*?class="effective-score" data-source="([^"]+)">([^<]*)<', page, re.S
    )
    assert section, f"no effective score of {criterion} on the page"
    return section.group(1), section.group(2)


def _notices(page: str) -> list[str]:
    return re.findall(r'<p class="warn stale-notice">([^<]*)</p>', page)


@pytest.mark.slow
def test_an_override_on_a_re_recorded_episode_is_stale_and_not_applied(
    tmp_path: Path, server: FakeMessagesServer, capsys
):
    root = small_dataset(tmp_path / "fold_rerecord")
    store_path = default_store_path(root)
    assert judge(root, server, JUDGED).scored == 3
    with serving(root, store_path, reviewer="ana") as review:
        client = httpx.Client(base_url=review.url)
        form = {
            "csrf": override_csrf(client.get("/episodes/1").text),
            "criterion": "R1",
            "score": "1",
            "reason": "judge_missed_evidence",
            "note": "grasp seen",
            "expected_old": "0",
        }
        assert client.post("/episodes/1/overrides", data=form).status_code == 303
        page = client.get("/episodes/1").text
        client.close()
    assert _effective(page, "R1") == ("override", "1")  # applied while the episode is the one reviewed
    assert _notices(page) == []

    rerecord(root, RERECORDED)  # episode 1 is recorded again; 0 and 2 come out byte for byte the same
    with serving(root, store_path, reviewer="ana") as review:
        page = httpx.get(f"{review.url}/episodes/1").text
        listing = httpx.get(f"{review.url}/").text
    assert _effective(page, "R1") == ("none", "–")  # neither the old judge result nor the override counts
    notices = _notices(page)
    assert len(notices) == 2
    assert "was made on an earlier version of this episode: it is stale and not shown" in notices[0]
    assert f"so101-judge --dataset.root={root} --dataset.episodes=[1]" in notices[0]
    assert re.match(r"R1: override #\d+ by ana \(.+, score 1\) was made on an earlier version", notices[1])
    assert _notices(listing) == [
        f"1 stale judge result left out (#1 changed): made before the episode was deleted or changed; judge them "
        f"again: so101-judge --dataset.root={root}",
        "1 stale override not applied (episodes #1): made on an earlier version of the episode; open it and record "
        "the score again",
    ]
    assert "<td>ana</td>" in page  # the audit trail keeps it

    assert judge(root, server, {1: REJUDGED_1}).scored == 1  # only the re-recorded episode is judged again
    with serving(root, store_path, reviewer="ana") as review:
        page = httpx.get(f"{review.url}/episodes/1").text
        listing = httpx.get(f"{review.url}/").text
        unchanged = httpx.get(f"{review.url}/episodes/0").text
    assert _effective(page, "R1") == ("judge", "0.5")  # the new judge label, not the stale override's 1
    [notice] = _notices(page)
    assert notice.startswith("R1: override #")
    assert [n.split(":")[0] for n in _notices(listing)] == ["1 stale override not applied (episodes #1)"]
    assert _effective(unchanged, "R1") == ("judge", "1")
    assert _notices(unchanged) == []

    capsys.readouterr()
    out_dir = tmp_path / "report"
    assert report_main([f"--datasets=[{root}]", f"--output_dir={out_dir}"]) == 0
    [policy] = json.loads((out_dir / "report.json").read_text())["policies"]
    assert policy["n"] == 3
    assert policy["episodes"][1]["criteria"]["R1"]["override"] is None
    assert policy["overrides"]["cell_rate"]["successes"] == 0  # no override counts anywhere
    totals = [sum(JUDGED[0]), sum(REJUDGED_1), sum(JUDGED[2])]
    assert policy["effective"]["mean_total_t"]["value"] == pytest.approx(sum(totals) / 3)  # not (3 + 1.5 + 2) / 3
    assert f"checked against the dataset {root}" in policy["source"]
    assert "1 stale override not applied" in policy["source"]
    assert "1 stale override not applied" in (out_dir / "report.md").read_text()
    with EvaluationStore(store_path) as store:
        assert [(o.episode_index, o.new_score) for o in overrides_of(store, root.name)] == [(1, 1.0)]  # kept
