"""The review app over HTTP: concurrent overrides, list filters, the audit sample, bad input."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx

from evaluation.overrides import effective_scores, overrides_of
from evaluation.review.catalog import audit_sample
from evaluation.review.config import AuditConfig
from evaluation.store import EvaluationStore
from tests.support.judged_store import ROUTED, judge_tables
from tests.support.review_pages import override_csrf
from tests.support.review_server import serving

DATASET = "fold_virtual"


def _listed(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="episode-(\d+)"', html)]


def test_simultaneous_overrides_of_one_criterion_are_all_recorded(review_server, judged_store: Path):
    before = judge_tables(judged_store)
    rounds = 8
    clients = [httpx.Client(base_url=review_server.url, timeout=60) for _ in range(2)]
    tokens = [override_csrf(c.get("/episodes/4").text) for c in clients]  # two reviewers with the page open
    barrier = threading.Barrier(2)
    statuses: list[list[int]] = [[], []]

    def submit(k: int) -> None:
        for i in range(rounds):
            barrier.wait(timeout=60)  # both posts of a round leave together
            form = {
                "csrf": tokens[k],
                "criterion": "R3",
                "score": ("0.5", "1")[k],
                "reason": "judge_missed_evidence",
                "note": f"reviewer {k} round {i}",
                "expected_old": "0",
            }
            statuses[k].append(clients[k].post("/episodes/4/overrides", data=form).status_code)

    threads = [threading.Thread(target=submit, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert statuses == [[303] * rounds, [303] * rounds]
    with EvaluationStore(judged_store) as store:
        history = overrides_of(store, DATASET, 4)
        effective = effective_scores(store, DATASET)[4]["R3"]
    assert sorted(o.note for o in history) == sorted(f"reviewer {k} round {i}" for k in range(2) for i in range(rounds))
    assert effective.overridden_by == history[-1]  # the later one (highest id) is effective
    assert effective.effective == history[-1].new_score
    assert [o.supersedes for o in history] == [None] + [o.override_id for o in history[:-1]]
    page = clients[0].get("/episodes/4").text
    assert page.count('class="trail-entry"') == 2 * rounds
    assert 'class="tag raced"' in page  # stale views are flagged in the audit trail
    assert judge_tables(judged_store) == before


def test_filters_routed_audit_tag_criterion_and_status(dataset_root: Path, judged_store: Path):
    audit = AuditConfig(fraction=0.4, seed=7)
    with serving(dataset_root, judged_store, audit=audit) as server:
        client = httpx.Client(base_url=server.url)
        assert _listed(client.get("/").text) == [0, 1, 2, 3, 4]
        assert _listed(client.get("/?routed=1").text) == list(ROUTED)
        assert _listed(client.get("/?routed=1&criterion=R3").text) == [0, 4]
        expected_sample = sorted(audit_sample(DATASET, [0, 1, 2, 3, 4], audit))
        assert len(expected_sample) == 2
        assert _listed(client.get("/?audit=1").text) == expected_sample
        assert _listed(client.get("/?audit=1").text) == expected_sample  # reproducible
        assert _listed(client.get("/?tag=smolvla").text) == [0, 1, 2, 3, 4]
        assert _listed(client.get("/?tag=act").text) == []
        one = client.get("/?criterion=R2").text
        assert 'data-criterion="R2"' in one
        assert 'data-criterion="R3"' not in one

        page = client.get("/episodes/2?routed=1").text
        assert 'href="/episodes/0?routed=1" id="prev-link"' in page  # j/k stay inside the filter
        assert 'href="/episodes/4?routed=1" id="next-link"' in page
        form = {
            "csrf": override_csrf(page),
            "criterion": "R2",
            "score": "0.5",
            "reason": "confirmed",
            "note": "",
            "expected_old": "0.5",
            "filters": "routed=1",
        }
        assert client.post("/episodes/2/overrides", data=form).status_code == 303
        assert _listed(client.get("/?status=partial").text) == [2]
        assert _listed(client.get("/?criterion=R2&status=reviewed").text) == [2]
        assert _listed(client.get("/?status=unreviewed").text) == [0, 1, 3, 4]
        assert client.get("/?criterion=R9").status_code == 400
        assert client.get("/?status=done").status_code == 400


def test_bad_override_input_is_explained_and_the_note_is_kept(review_server, judged_store: Path):
    client = httpx.Client(base_url=review_server.url)
    token = override_csrf(client.get("/episodes/1").text)
    base = {"csrf": token, "criterion": "R1", "score": "1", "reason": "other", "note": "", "expected_old": "0"}
    no_note = client.post("/episodes/1/overrides", data=base)
    assert no_note.status_code == 400
    assert "needs a note" in no_note.text
    no_reason = client.post("/episodes/1/overrides", data=base | {"reason": "", "note": "kept text"})
    assert no_reason.status_code == 400
    assert "choose a reason code" in no_reason.text
    assert ">kept text</textarea>" in no_reason.text
    assert client.post("/episodes/1/overrides", data=base | {"score": "0.7", "note": "x"}).status_code == 400
    assert client.post("/episodes/1/overrides", data=base | {"criterion": "R9", "note": "x"}).status_code == 400
    assert client.post("/episodes/1/overrides", data=base | {"note": "x" * 5000}).status_code == 400
    assert client.post("/episodes/99/overrides", data=base | {"note": "x"}).status_code == 403  # token is per page
    assert client.get("/episodes/99").status_code == 404
    assert "no episode 99" in client.get("/episodes/99").text
    with EvaluationStore(judged_store) as store:
        assert overrides_of(store, DATASET) == []
