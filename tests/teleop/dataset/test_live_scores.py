"""The live score file: written atomically, read back as written, a bad file named without losing the others.

It lives outside the journal's episode folders, so a repair of a later interrupted save (which deletes
every file there that the journal does not list) keeps it, and sweeps its temp file.
"""

import json
import logging
import math
from pathlib import Path

import pytest

from teleop.dataset import journal
from teleop.dataset.journal import begin_commit, read_journal
from teleop.dataset.live_scores import (
    TEMP_SUFFIX,
    LiveScore,
    LiveScoreError,
    live_score_path,
    live_score_paths,
    read_live_score,
    read_live_scores,
    write_live_score,
)
from teleop.dataset.repair import repair

WHEN = "2026-01-05T14:02:11.250+00:00"


def test_round_trip_and_the_exact_format(tmp_path: Path):
    scored = LiveScore(3, " ana ", {"R1": 1, "R2": 0.5, "R3": 0.0}, scored_at=WHEN, frames=412)
    skipped = LiveScore(12, "ana", skipped=True, scored_at=WHEN)
    path = write_live_score(tmp_path, scored)
    write_live_score(tmp_path, skipped)
    assert path == tmp_path / "meta/so101/live_scores/episode-000003.json" == live_score_path(tmp_path, 3)
    assert json.loads(path.read_text()) == {
        "schema": 1,
        "episode_index": 3,
        "operator": "ana",
        "scored_at": WHEN,
        "skipped": False,
        "scores": {"R1": 1.0, "R2": 0.5, "R3": 0.0},
        "frames": 412,
    }
    assert json.loads(live_score_path(tmp_path, 12).read_text())["scores"] == {}
    assert "frames" not in json.loads(live_score_path(tmp_path, 12).read_text())
    assert read_live_scores(tmp_path) == [scored, skipped]  # by episode index
    assert read_live_score(path).scores == {"R1": 1.0, "R2": 0.5, "R3": 0.0}
    assert [p.name for p in live_score_paths(tmp_path)] == ["episode-000003.json", "episode-000012.json"]
    assert read_live_scores(tmp_path / "elsewhere") == []


def test_a_rewrite_replaces_the_file_and_a_failed_one_keeps_the_old(tmp_path: Path, monkeypatch):
    write_live_score(tmp_path, LiveScore(0, "ana", {"R1": 0.0}, scored_at=WHEN))
    write_live_score(tmp_path, LiveScore(0, "ana", {"R1": 1.0}, scored_at=WHEN))
    assert read_live_scores(tmp_path)[0].scores == {"R1": 1.0}
    assert sorted(p.name for p in live_score_path(tmp_path, 0).parent.iterdir()) == ["episode-000000.json"]

    def no_rename(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("teleop.dataset.live_scores.os.replace", no_rename)
    with pytest.raises(OSError, match="No space left"):
        write_live_score(tmp_path, LiveScore(0, "bob", {"R1": 0.5}, scored_at=WHEN))
    assert read_live_scores(tmp_path)[0].operator == "ana"  # the old file is whole; the temp is never read


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scores": {"R1": math.nan}}, "finite number"),
        ({"scores": {"R1": math.inf}}, "finite number"),
        ({"scores": {"R1": True}}, "finite number"),
        ({"scores": {"R1": 1.5}}, "in 0..1"),
        ({"scores": {"": 1.0}}, "criterion ''"),
        ({"operator": "  "}, "operator='  '"),
        ({"episode_index": -1}, "episode_index=-1"),
        ({"scored_at": "yesterday"}, "not ISO 8601"),
        ({"scored_at": "2026-01-05T14:02:11"}, "not UTC"),
        ({"skipped": True}, "skipped but has scores"),
        ({"scores": {}}, "pass skipped=True"),
        ({"frames": 0}, "frames=0"),
    ],
)
def test_invalid_values_are_refused_with_the_field_named(fields, message):
    values = {"episode_index": 1, "operator": "ana", "scores": {"R1": 1.0}, "scored_at": WHEN} | fields
    with pytest.raises(LiveScoreError, match=message):
        LiveScore(**values)


def test_a_corrupt_file_is_named_and_the_others_are_read(tmp_path: Path, caplog):
    write_live_score(tmp_path, LiveScore(0, "ana", {"R1": 1.0}, scored_at=WHEN))
    write_live_score(tmp_path, LiveScore(2, "ana", {"R1": 0.0}, scored_at=WHEN))
    torn = live_score_path(tmp_path, 1)
    torn.write_text('{"schema": 1, "episode_index": 1, "oper')
    with caplog.at_level(logging.WARNING, logger="teleop.dataset.live_scores"):
        scores = read_live_scores(tmp_path)
    assert [s.episode_index for s in scores] == [0, 2]
    assert len(caplog.records) == 1
    assert str(torn) in caplog.records[0].getMessage()
    with pytest.raises(LiveScoreError) as error:
        read_live_score(torn)
    assert str(torn) in str(error.value)
    assert f"mv {torn} {torn}.bad" in str(error.value)  # the next step, pasteable


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"schema": 2}, "schema 2; this version reads 1"),
        ({"extra": 1}, "unknown keys \\['extra'\\]"),
        ({"episode_index": 5}, "belongs in episode-000005.json"),
        ({"scores": {"R1": "1"}}, "finite number"),
    ],
)
def test_a_file_not_written_by_write_live_score_is_refused(tmp_path: Path, doc: dict, message: str):
    path = write_live_score(tmp_path, LiveScore(4, "ana", {"R1": 1.0}, scored_at=WHEN))
    path.write_text(json.dumps(json.loads(path.read_text()) | doc))
    with pytest.raises(LiveScoreError, match=message):
        read_live_score(path)
    assert read_live_scores(tmp_path) == []


def test_a_repair_of_a_later_interrupted_save_keeps_the_score_and_sweeps_its_temp_file(committed):
    root, _ = committed
    assert TEMP_SUFFIX == journal.TEMP_SUFFIX  # the repair sweeps what a crash mid-write leaves
    path = write_live_score(root, LiveScore(1, "ana", {"R1": 1.0}, scored_at=WHEN))
    leftover = path.with_name("episode-000002.json" + TEMP_SUFFIX)
    leftover.write_text("{")
    entry = begin_commit(root, read_journal(root))  # episode 2's save starts, then the process dies
    (root / "data/chunk-000").mkdir(parents=True, exist_ok=True)
    (root / "data/chunk-000/file-999.parquet").write_bytes(b"half")
    repair(root, entry)
    assert not (root / "data/chunk-000/file-999.parquet").exists()  # the save was rolled back
    assert read_live_scores(root) == [LiveScore(1, "ana", {"R1": 1.0}, scored_at=WHEN)]
    assert not leftover.exists()
