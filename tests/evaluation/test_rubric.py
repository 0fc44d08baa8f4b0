from pathlib import Path

import pytest
import yaml

from evaluation.errors import RubricError
from evaluation.rubric import DEFAULT_RUBRIC_PATH, load_rubric, parse_rubric
from evaluation.vocabulary import HeuristicSignal, Phase


def _raw() -> dict:
    return yaml.safe_load(DEFAULT_RUBRIC_PATH.read_text())


def test_default_rubric_is_the_cloth_folding_r1_r3_rubric():
    rubric = load_rubric()
    assert rubric.criterion_ids == ("R1", "R2", "R3")
    assert rubric.max_total == 3.0
    r3 = rubric.criteria[2]
    assert r3.judge_on == "final_state"
    assert "overhead" in r3.views
    assert Phase.PUSH in r3.phases
    assert Phase.FINAL in r3.phases
    assert r3.heuristic == HeuristicSignal.MOTION_AFTER_RELEASE
    for criterion in rubric.criteria:
        assert [lv.score for lv in criterion.levels] == [1.0, 0.5, 0.0]
    assert rubric.version.startswith("cloth_fold@")
    assert len(rubric.version) == len("cloth_fold@") + 12


@pytest.mark.parametrize("path", sorted((DEFAULT_RUBRIC_PATH.parent).glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_rubric_loads(path: Path):
    assert load_rubric(path).criteria


def test_version_ignores_layout_and_comments_but_not_content(tmp_path: Path):
    base = load_rubric()
    reformatted = tmp_path / "r.yaml"
    reformatted.write_text("# a comment\n" + yaml.safe_dump(_raw(), width=60, sort_keys=True))
    assert load_rubric(reformatted).version == base.version
    changed = _raw()
    changed["criteria"][2]["levels"][0]["anchor"] += " Moved at least 10 cm."
    assert parse_rubric(changed).version != base.version


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["criteria"][0].update(colour="red"), "unknown field"),
        (lambda d: d["criteria"][0]["levels"].pop(), "exactly one anchor per score"),
        (lambda d: d["criteria"][1].update(views=["side_cam"]), "views"),
        (lambda d: d["criteria"][1].update(phases=["lunch"]), "phases"),
        (lambda d: d["criteria"][2]["levels"][0].update(score=0.7), "score=0.7"),
        (lambda d: d["criteria"][2].update(id="R1"), "unique"),
        (lambda d: d["criteria"][0].update(judge_on="vibes"), "judge_on"),
        (lambda d: d.pop("task_description"), "task_description"),
    ],
)
def test_invalid_rubrics_name_the_field(mutate, message):
    raw = _raw()
    mutate(raw)
    with pytest.raises(RubricError, match=message):
        parse_rubric(raw, source="bad.yaml")


def test_missing_rubric_file_says_what_to_do(tmp_path: Path):
    with pytest.raises(RubricError, match="--rubric_path"):
        load_rubric(tmp_path / "nope.yaml")
