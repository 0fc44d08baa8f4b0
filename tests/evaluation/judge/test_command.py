"""so101-judge through its entry point (in process; one slow test runs it as a child process and kills it)."""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from evaluation.commands.judge import main
from evaluation.store import EvaluationStore
from evaluation.testing.fake_messages_server import FakeMessagesServer
from robot.shell.exit_codes import Exit

REPO = Path(__file__).resolve().parents[3]


def _args(root: Path, store: Path, *extra: str) -> list[str]:
    return [f"--dataset.root={root}", f"--store_path={store}", "--judge.retry.initial_backoff_s=0.01", *extra]


def test_help_shows_copy_paste_examples(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "so101-judge --dataset.root=outputs/datasets/fold_smolvla --dry_run=true" in out
    assert "--judge.model" in out
    assert "--run.concurrency" in out
    assert "seconds" in out


def test_missing_key_points_to_dry_run_and_the_heuristic(dataset_root, tmp_path, server, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(_args(dataset_root, tmp_path / "s.sqlite", f"--judge.base_url={server.base_url}"))
    assert code == Exit.FAILED  # the table's "failed": the line says what, and the ways on
    out = " ".join(capsys.readouterr().err.split())
    assert "ANTHROPIC_API_KEY is not set" in out
    assert "--dry_run=true" in out  # each way on a command that pastes
    assert "--scorer=heuristic" in out
    assert server.requests == []


def test_dry_run_writes_sheets_prompt_and_estimate_and_calls_nothing(
    dataset_root, tmp_path, server, capsys, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # even with a key, a dry run sends nothing
    out_dir = tmp_path / "dry"
    store = tmp_path / "s.sqlite"
    code = main(
        _args(
            dataset_root,
            store,
            "--dry_run=true",
            f"--dry.output_dir={out_dir}",
            "--dry.sheets=2",
            "--judge.samples=2",
            f"--judge.base_url={server.base_url}",
        )
    )
    assert code == Exit.DONE
    assert server.requests == []
    assert not store.exists()
    episode = out_dir / "episode_000000"
    with Image.open(episode / "contact_sheet.jpg") as sheet:
        assert sheet.width > 300
        assert sheet.height > 300
    prompt = (episode / "prompt.md").read_text()
    assert "# System (cached)" in prompt
    assert "| view overhead | t=" in prompt
    assert '"required"' in prompt
    request = json.loads((episode / "request.json").read_text())
    images = [b for b in request["messages"][0]["content"] if b["type"] == "image"]
    assert images
    assert all(b["source"]["data"].startswith("<") for b in images)
    assert len(list((episode / "frames").glob("*.jpg"))) == len(images)
    assert not (out_dir / "episode_000002").exists()  # only --dry.sheets episodes get files
    estimate = json.loads((out_dir / "estimate.json").read_text())
    assert estimate["estimate"]["calls"] == 10
    assert estimate["estimate"]["usd"] > 0
    assert "estimated cost $" in " ".join(capsys.readouterr().out.split())


def test_judging_through_the_entry_point_then_nothing_to_do(dataset_root, tmp_path, server, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    store = tmp_path / "s.sqlite"
    csv_path = tmp_path / "scores.csv"
    args = _args(
        dataset_root,
        store,
        f"--judge.base_url={server.base_url}",
        "--judge.samples=1",
        "--run.tag=act-v1",
        f"--export.csv_path={csv_path}",
    )
    assert main(args) == Exit.DONE
    out = " ".join(capsys.readouterr().out.split())
    assert "estimate before sending: 5 calls to claude-sonnet-5-5" in out
    assert "scored 5" in out
    found = re.search(r"count_tokens: ([\d,]+) for the first call, local estimate ([\d,]+)", out)
    counted, local = (int(x.replace(",", "")) for x in found.groups())
    assert counted == pytest.approx(local, rel=0.02)  # the local estimate agrees with the API's own count
    counts = [r for r in server.requests if r.path == "/v1/messages/count_tokens"]
    assert len(counts) == 1
    assert counts[0].problems == []
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 15
    assert {r["tag"] for r in rows} == {"act-v1"}
    assert main(args) == Exit.DONE
    assert "nothing to judge" in " ".join(capsys.readouterr().out.split())
    assert len(server.message_requests()) == 5


def test_failed_episodes_give_exit_code_3(dataset_root, tmp_path, server, monkeypatch):
    from evaluation.testing.fake_api_script import Refusal

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server.script(Refusal(), episode=1)
    code = main(_args(dataset_root, tmp_path / "s.sqlite", f"--judge.base_url={server.base_url}", "--judge.samples=1"))
    assert code == Exit.PARTIAL


def test_cost_limit_stops_before_any_judge_call(dataset_root, tmp_path, server, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    code = main(
        _args(
            dataset_root,
            tmp_path / "s.sqlite",
            f"--judge.base_url={server.base_url}",
            "--run.max_estimated_cost_usd=0.001",
        )
    )
    assert code == Exit.FAILED
    assert server.message_requests() == []  # only the free count_tokens check went out
    assert "exceeds run.max_estimated_cost_usd" in " ".join(capsys.readouterr().err.split())


def test_config_file_plus_dotted_overrides(dataset_root, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = tmp_path / "judge.yaml"
    config.write_text(
        f"dataset:\n  root: {dataset_root}\n  episodes: [0, 1]\nscorer: heuristic\n"
        f"store_path: {tmp_path / 'from_file.sqlite'}\nrun:\n  tag: from-file\n"
    )
    assert (
        main([f"--config_path={config}", "--run.tag=override", f"--export.parquet_path={tmp_path / 'o.parquet'}"]) == 0
    )
    with EvaluationStore(tmp_path / "from_file.sqlite") as store:
        assert store.query("SELECT tag, scorer FROM runs")[0][:] == ("override", "heuristic")
        assert len(store.query("SELECT * FROM episode_results")) == 2


@pytest.mark.parametrize(
    ("arg", "field"),
    [("--judge.samples=0", "judge.samples"), ("--scorer=gpt", "scorer"), ("--judge.effort=extreme", "judge.effort")],
)
def test_invalid_values_name_the_field(dataset_root, tmp_path, capsys, arg, field):
    assert main(_args(dataset_root, tmp_path / "s.sqlite", arg)) == Exit.USAGE
    assert field in capsys.readouterr().err


def test_missing_dataset_says_what_to_pass(tmp_path, capsys):
    assert main([f"--dataset.root={tmp_path / 'nope'}"]) == Exit.FAILED
    assert "--dataset.root" in " ".join(capsys.readouterr().err.split())


@pytest.mark.slow
def test_killed_mid_run_leaves_a_consistent_store_and_the_next_run_resumes(dataset_root, tmp_path):
    """`kill -9` of the command while it judges; the store stays consistent; a rerun finishes the rest."""
    store = tmp_path / "s.sqlite"
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "PYTHONPATH": str(REPO)}
    with FakeMessagesServer(latency_s=0.4) as server:
        args = [
            sys.executable,
            "-m",
            "evaluation.commands.judge",
            *_args(
                dataset_root, store, f"--judge.base_url={server.base_url}", "--judge.samples=2", "--run.concurrency=1"
            ),
        ]
        child = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while len(server.message_requests()) < 5 and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait(timeout=30)
        with EvaluationStore(store) as s:
            done = {r[0] for r in s.query("SELECT episode_index FROM episode_results")}
            assert 1 <= len(done) < 5
            assert s.query("SELECT COUNT(*) FROM run_events")[0][0] == 0  # killed: no clean end recorded
        rerun = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    with EvaluationStore(store) as s:
        rows = s.query("SELECT episode_index, COUNT(*) n FROM episode_results GROUP BY episode_index")
        assert {r["episode_index"]: r["n"] for r in rows} == {i: 1 for i in range(5)}
