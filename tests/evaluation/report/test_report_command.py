"""so101-report through its entry point: two policies in a real store, an override, the files, and clear errors."""

import json
from pathlib import Path

import pytest

from evaluation.commands.judge import main as judge_main
from evaluation.commands.report import main
from evaluation.overrides import OverrideStore
from evaluation.store import EvaluationStore
from evaluation.testing.fake_api_script import Reply
from robot.shell.exit_codes import Exit
from tests.evaluation.report.report_testkit import add_override, add_run


def _out(capsys) -> str:
    """What the command printed, on either stream (its error line is on stderr), as one line."""
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())


@pytest.fixture
def two_tags(tmp_path: Path) -> Path:
    path = tmp_path / "fold.evaluation.sqlite"
    with EvaluationStore(path) as store:
        add_run(
            store,
            "fold_smolvla",
            "smolvla-v2",
            {
                i: s
                for i, s in enumerate(
                    [(1, 1, 0.5), (1, 1, 1), (1, 0.5, 0), (1, 1, 0), (0.5, 0, 0), (1, 1, 1), (1, 1, 0.5)]
                )
            },
        )
        add_run(
            store,
            "fold_act",
            "act-v1",
            {
                i: s
                for i, s in enumerate(
                    [(0, 0, 0), (0.5, 0, 0), (1, 0.5, 0), (0, 0, 0), (0.5, 0.5, 0), (1, 0, 0), (0, 0, 0)]
                )
            },
        )
    add_override(path, "fold_smolvla", 2, "R3", 1.0)
    return path


def test_two_tags_with_an_override(two_tags, tmp_path, capsys):
    out_dir = tmp_path / "report"
    code = main(
        [
            f"--store_path={two_tags}",
            "--tags=[smolvla-v2,act-v1]",
            "--names=[SmolVLA,ACT]",
            f"--output_dir={out_dir}",
            "--title=Fold",
        ]
    )
    assert code == Exit.DONE
    out = _out(capsys)
    assert "SmolVLA − ACT" in out
    assert "(exact)" in out
    assert str(out_dir / "report.html") in out
    doc = json.loads((out_dir / "report.json").read_text())
    smolvla, act = doc["policies"]
    assert (smolvla["name"], smolvla["n"], act["n"]) == ("SmolVLA", 7, 7)
    assert smolvla["unadjusted"]["mean_total_t"]["value"] == pytest.approx(15 / 7)
    assert smolvla["effective"]["mean_total_t"]["value"] == pytest.approx(16 / 7)  # R3 of episode 2: 0 -> 1
    assert smolvla["overrides"]["cell_rate"]["successes"] == 1
    r3 = next(a for a in smolvla["agreement"] if a["label"] == "R3")
    assert (r3["n"], r3["bias"]) == (1, -1.0)
    assert act["effective"] == act["unadjusted"] | {
        "view": "effective",
        "label": "effective (judge + 0 person overrides)",
    }
    assert (act["unadjusted"]["view"], act["unadjusted"]["label"]) == ("judge", "judge (claude-sonnet-5-5)")
    assert [(c["view"], c["label"]) for c in doc["comparisons"]] == [
        ("judge", "judge (claude-sonnet-5-5)"),
        ("effective", "effective (judge + person overrides)"),
    ]
    assert {p.name for p in (out_dir / "plots").iterdir()} == {
        "comparison.png",
        "criteria.png",
        "heatmap-1.png",
        "heatmap-2.png",
    }
    html = (out_dir / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4
    assert "## Differences between policies" in (out_dir / "report.md").read_text()


def test_policies_from_a_config_file(two_tags, tmp_path, capsys):
    config = tmp_path / "report.yaml"
    config.write_text(
        f"policies:\n"
        f"  - {{name: new, store_path: {two_tags}, tag: smolvla-v2}}\n"
        f"  - {{name: old, store_path: {two_tags}, dataset_id: fold_act}}\n"
        f"output_dir: {tmp_path / 'cfg'}\nstats:\n  seed: 3\n"
    )
    assert main([f"--config_path={config}", "--stats.bootstrap_resamples=500"]) == Exit.DONE
    doc = json.loads((tmp_path / "cfg" / "report.json").read_text())
    assert [p["name"] for p in doc["policies"]] == ["new", "old"]
    assert (doc["stats"]["seed"], doc["stats"]["bootstrap_resamples"]) == (3, 500)


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (
            ["--tags=[smolvla-v3]"],
            "no judge run in {store} has tag 'smolvla-v3'; tags in this store: 'act-v1', 'smolvla-v2'",
            Exit.FAILED,
        ),
        (["--tags=[smolvla-v2,act-v1]", "--names=[a]"], "--names has 1 entries for 2 policies", Exit.USAGE),
        (["--tags=[smolvla-v2]", "--scorer=best"], "scorer='best'; allowed: ['auto', 'llm', 'heuristic']", Exit.USAGE),
        (["--tags=[smolvla-v2]", "--stats.bootstrap_resamples=5"], "stats.bootstrap_resamples=5", Exit.USAGE),
        (["--tags=[smolvla-v2]", "--scorer=heuristic"], "has no episode scored by the heuristic scorer", Exit.FAILED),
    ],
)
def test_bad_input_is_one_clear_line(two_tags, tmp_path, capsys, args, message, code):
    assert main([f"--store_path={two_tags}", f"--output_dir={tmp_path / 'x'}", *args]) == code
    out = _out(capsys)
    assert message.format(store=two_tags) in out
    assert "Traceback" not in out
    assert not (tmp_path / "x").exists()


def test_no_policy_and_missing_store(tmp_path, capsys):
    assert main([]) == Exit.USAGE
    assert "no policy given: pass --datasets=" in _out(capsys)
    root = tmp_path / "fold_new"
    assert main([f"--datasets=[{root}]"]) == Exit.FAILED  # a dataset never judged: nothing to report
    assert f"no evaluation store at {tmp_path / 'fold_new.evaluation.sqlite'}" in _out(capsys)
    assert not (tmp_path / "fold_new.evaluation.sqlite").exists()
    assert main(["--tags=[act-v1]"]) == Exit.USAGE
    assert "policy 'act-v1' names no store: pass --store_path=<file.sqlite>" in _out(capsys)


def test_no_scored_episode(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    with EvaluationStore(path) as store:
        add_run(store, "fold", "crashed", {})
    assert main([f"--store_path={path}", "--tags=[crashed]"]) == Exit.FAILED
    assert "holds no scored episode; run so101-judge on it first" in _out(capsys)


def test_help_shows_copy_paste_examples(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "so101-report --datasets=[outputs/datasets/fold_smolvla,outputs/datasets/fold_act]" in out
    assert "--stats.seed" in out


@pytest.mark.slow
def test_judged_by_so101_judge_then_reported(dataset_root, tmp_path, server, capsys, monkeypatch):
    """The whole chain: the LLM judge (loopback API) and the heuristic score one dataset under two tags, a
    reviewer overrides R3, so101-report compares the two."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    store = tmp_path / "fold.sqlite"
    for episode, scores in enumerate([(1, 1, 0), (0, 0, 0), (0.5, 0.5, 0), (1, 1, 0), (1, 1, 0.5)]):
        server.script(Reply(scores=tuple(zip(("R1", "R2", "R3"), scores, strict=True))), episode=episode)
    common = [f"--dataset.root={dataset_root}", f"--store_path={store}", "--judge.retry.initial_backoff_s=0.01"]
    assert judge_main([*common, f"--judge.base_url={server.base_url}", "--judge.samples=1", "--run.tag=smolvla"]) == 0
    assert judge_main([*common, "--scorer=heuristic", "--run.tag=motion"]) == 0
    with EvaluationStore(store) as s, OverrideStore(s) as overrides:
        overrides.record(
            dataset_root.name, 0, "R3", 1.0, "view_ambiguous", "pushed aside in the right wrist view", "ana", 0.0
        )
    capsys.readouterr()
    out_dir = tmp_path / "report"
    code = main(
        [f"--datasets=[{dataset_root}]", "--tags=[smolvla,motion]", f"--store_path={store}", f"--output_dir={out_dir}"]
    )
    assert code == Exit.DONE
    out = _out(capsys)
    assert "motion: scores come from the motion heuristic" in out
    doc = json.loads((out_dir / "report.json").read_text())
    smolvla, motion = doc["policies"]
    assert (smolvla["scorer"], motion["scorer"]) == ("llm", "heuristic")
    assert smolvla["unadjusted"]["mean_total_t"]["value"] == pytest.approx((2 + 0 + 1 + 2 + 2.5) / 5)
    assert smolvla["effective"]["mean_total_t"]["value"] == pytest.approx((3 + 0 + 1 + 2 + 2.5) / 5)
    assert smolvla["episodes"][0]["criteria"]["R3"]["override"]["reviewer"] == "ana"
    # The override belongs to the dataset's episode, so both tags' effective scores carry it.
    assert motion["overrides"]["cell_rate"]["successes"] == 1
    with EvaluationStore(store) as s:
        judge_r3 = s.query(
            "SELECT score FROM scores s JOIN runs r ON r.run_id = s.run_id "
            "WHERE r.tag = 'smolvla' AND s.episode_index = 0 AND s.criterion = 'R3'"
        )
    assert [r[0] for r in judge_r3] == [0.0]  # the judge's record is untouched
    assert (out_dir / "report.html").stat().st_size > 10_000
