"""Every command a so101-* command prints as the next step parses with that command's own parser.

Three parts. The checker itself (tests/support/next_steps.py): it refuses an unknown option, a bad
value, a wrong syntax, a command that does not exist, and accepts placeholders. Then a broad set of
failures across the commands, run in-process, whose printed next steps must all parse. Then
so101-deploy's printed next steps, run as printed on the rollouts it recorded: the judge (without a
key: its documented refusal; with one: against the loopback Messages API), the review page and the
report. The whole suite's printed next steps are checked at its end as well (tests/conftest.py).
"""

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
import yaml

from evaluation.testing.fake_messages_server import FakeMessagesServer
from evaluation.testing.synthetic_dataset import Scenario, write_synthetic_dataset
from tests.support.command_configs import command_main
from tests.support.commands import ForegroundJob, run
from tests.support.next_steps import (
    LOG_ENV,
    NextCommand,
    check_session,
    commands_in,
    logged_failures,
    record,
    why_not,
)
from tests.support.record_runs import rig_file

# --- the checker -------------------------------------------------------------------------------


def _only(text: str) -> NextCommand:
    found = commands_in(text)
    assert len(found) == 1, found
    return found[0]


def test_deploys_old_next_step_is_refused_for_its_unknown_option():
    # What so101-deploy printed before issue 19: so101-judge has no --dataset.repo_id.
    command = _only("judge them with: so101-judge --dataset.root=/data/eval --dataset.repo_id=me/eval")
    assert command.args == ("--dataset.root=/data/eval", "--dataset.repo_id=me/eval")
    assert "unknown option --dataset.repo_id" in why_not(command)


@pytest.mark.parametrize(
    ("line", "printed_by", "why"),
    [
        ("error: x. Next: so101-deploy --policy.path=/ckpt --engine.kind=fast", None, "'fast' is not one of"),
        ("error: x. Next: so101-judge --dataset.root=<folder> --judge.samples=many", None, "judge.samples"),
        ("error: x. Next: so101-replay --pace=slowly --dataset.root=<folder> ...", None, "'slowly' is not one of"),
        ("error: x. Next: so101-record --dataset.root /data/fold", None, "exit 2"),  # a value needs `=`
        ("error: x. Next: so101-calibration --arms=left_follower", None, "no such command"),
        ("error: x. Next: run so101-judge", None, "dataset.root is required"),
        ("error: x. Next: so101-review --dataset.root=/d --reviwer=ana ...", None, "unknown option --reviwer"),
        ("error: x. Next: add --pace=slowly", "so101-replay", "'slowly' is not one of"),
        ("error: x. Next: so101-judge --dataset.root=/d --dry-run", None, "old spelling of --dry_run=true"),
        ("error: x. Next: so101-report --config_path=r.yaml", None, "old spelling of --options_path"),
        ("error: x. Next: pass --store_path=<file>", "so101-replay", "unknown option --store_path"),
        ("next steps:\n  then:\n    so101-report --datasets=[/d] --scorer=best", None, "scorer='best'"),
    ],
)
def test_a_next_step_that_does_not_parse_is_refused(line, printed_by, why):
    found = commands_in(line, printed_by=printed_by)
    assert found, line
    reasons = [why_not(command) for command in found]
    assert any(reason and why in reason for reason in reasons), reasons


@pytest.mark.parametrize(
    "line",
    [
        "error: a. Next: so101-judge --dataset.root=<dataset folder> --dry_run=true.",  # placeholder
        "error: b. Next: so101-record --dataset.root='/tmp/my data' --dataset.resume=true ...",  # quoted, elided
        "error: c. Next: so101-report --datasets=[<dataset>,...] --names=[<name>,...]",  # list placeholders
        "error: d. Next: so101-doctor --config_path=$HOME/rig.yaml --rig.bus.read_deadline_ms=<ms>, then retry",
        "error: e. Next: so101-deploy --config_path=<rig file> --engine.kind=remote --remote.host=gpu-box ...",
        "error: f. Next: run so101-calibrate, or copy the calibration files",  # bare, at a sentence's end
        "raise the limit: so101-judge --dataset.root=/d --run.max_estimated_cost_usd=12",
        "train with: lerobot-train --dataset.repo_id=me/fold --dataset.root=/data/fold ...",
        "error: g. Next: check the dataset (so101-replay --dataset.root=/d --dataset.episodes=all).",
    ],
)
def test_placeholders_quotes_and_elisions_parse(line):
    found = commands_in(line)
    assert len(found) == 1, found
    assert why_not(found[0]) is None


NAMED_OPTIONS = [  # (what a command printed, the command, the options of its own that a Next: names)
    (
        "error: a. Next: add --pace=realtime, or use --engine.kind=sync (in line)",
        "so101-replay",
        ["--pace=realtime", "--engine.kind=sync"],
    ),
    (
        "error: b. Next: --arms=followers, or name them, e.g. --arms=left_follower,left_leader.",
        "so101-calibrate",
        ["--arms=followers", "--arms=left_follower,left_leader"],
    ),
    # Another tool's options are not the command's: hf's, python -m's, those after rm's `&&`.
    (
        "error: c. Next: get it (hf download me/m --repo-type=dataset --local-dir=/l), or pass --dataset.root=<f>",
        "so101-replay",
        ["--dataset.root=<f>"],
    ),
    (
        "error: d. Next: a new folder (--dataset.root=<new folder>), or convert it first: python -m"
        " lerobot.scripts.convert --repo-id=me/m --root=/d",
        "so101-record",
        ["--dataset.root=<new_folder>"],
    ),
    (
        "error: e. Next: restore it; or keep its files: rm /d/j.json && python -m teleop.dataset.adopt --root=/d",
        "so101-record",
        [],
    ),
]


@pytest.mark.parametrize(("line", "printed_by", "options"), NAMED_OPTIONS)
def test_options_a_next_step_names_are_the_printing_commands_own(line, printed_by, options):
    found = commands_in(line, printed_by=printed_by)
    assert [c.args for c in found] == [(option,) for option in options]
    assert [why_not(c) for c in found if c.added] == [None] * len(options)


def test_a_printed_rig_file_is_read_when_it_is_one(tmp_path):
    broken = tmp_path / "rig.yaml"
    broken.write_text("id: x\nbus: {read_deadline_ms: fast}\nvirtual: {}\n")  # what the error was about
    assert why_not(_only(f"error: x. Next: fix it, then run so101-doctor --config_path={broken}")) is None
    # A valid one is read: its settings hold, 30 ms is below its reply timeout (not the virtual rig's 20 ms).
    slow_bus = tmp_path / "slow_bus.yaml"
    slow_bus.write_text("id: x\nbus: {reply_timeout_ms: 40, read_deadline_ms: 80}\nvirtual: {}\n")
    fine_with_the_virtual_rig = f"error: y. Next: so101-doctor --config_path={slow_bus} --rig.bus.read_deadline_ms=30"
    assert "must be >= bus.reply_timeout_ms (40.0)" in why_not(_only(fine_with_the_virtual_rig))


def test_what_counts_as_a_command_line():
    text = (
        "\x1b[1;31merror:\x1b[0m no dataset. Next: check it was finalized (so101-record repairs it)\n"  # a mention
        "ports: $XDG_RUNTIME_DIR/so101-virtual/left_follower (so101-tests-1/x)\n"  # paths, not commands
        "so101-judge: 3 episodes scored\n"  # a name at the start of a status line
        "On the robot PC:\n"
        "  ssh -N -L 8080:127.0.0.1:8080 gpu (leave it running)\n"
        "  so101-deploy --engine.kind=remote --remote.port=8080 \\\n"  # continued: the rest is the user's
        "      --remote.checkpoint=/abs\n"
        "error: x. Next: run so101-doctor.\n"
    )
    found = commands_in(text)
    assert [(c.script, c.args, c.elided) for c in found] == [
        ("so101-deploy", ("--engine.kind=remote", "--remote.port=8080"), True),
        ("so101-doctor", (), False),
    ]


def test_records_and_deploys_closing_next_steps_parse_for_any_folder():
    from teleop.run_report import rollout_next_steps, train_next_step

    folder = Path("/data/my rollouts")  # a space: quoted
    train = commands_in(train_next_step("me/fold", folder))
    assert [(c.script, c.args) for c in train] == [
        ("lerobot-train", ("--dataset.repo_id=me/fold", f"--dataset.root={folder}"))
    ]
    steps = commands_in(rollout_next_steps(folder))
    assert [(c.script, c.args) for c in steps] == [
        ("so101-judge", (f"--dataset.root={folder}",)),
        ("so101-review", (f"--dataset.root={folder}",)),
        ("so101-report", (f"--datasets=[{folder}]",)),
    ]
    assert [why_not(c) for c in [*train, *steps]] == [None] * 4


def test_the_session_log_keeps_each_command_once_and_lists_those_that_fail(tmp_path, monkeypatch):
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "log.jsonl"))
    bad = "error: old. Next: so101-judge --dataset.root=/e --dataset.repo_id=me/e"
    record(f"{bad}\nerror: fine. Next: so101-judge --dataset.root=/e", "test_a (so101-deploy)")
    record(bad, "test_b (so101-deploy)")
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 3
    failures = logged_failures()
    assert len(failures) == 1, failures
    assert failures[0].startswith("so101-judge --dataset.root=/e --dataset.repo_id=me/e (printed by test_a")
    assert "unknown option --dataset.repo_id" in failures[0]


def test_a_session_that_printed_a_bad_next_step_fails(tmp_path, monkeypatch):
    monkeypatch.setenv(LOG_ENV, str(tmp_path / "log.jsonl"))
    passed = SimpleNamespace(exitstatus=pytest.ExitCode.OK)
    assert check_session(passed) == []
    assert passed.exitstatus == pytest.ExitCode.OK
    record("error: x. Next: so101-judge --dataset.root=/e", "test_fine")
    assert check_session(passed) == []
    record("error: x. Next: so101-release --yes", "test_bad")  # a bool option needs its value
    assert len(check_session(passed)) == 1
    assert passed.exitstatus == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow
def test_what_the_suites_commands_print_reaches_the_session_log(capsys):
    log = Path(os.environ[LOG_ENV])  # tests/conftest.py sets it for the whole session
    before = log.read_text() if log.is_file() else ""
    result = run("so101-judge", "--dataset.root=/nonexistent", "--options_path=/nonexistent.yaml")
    assert result.returncode == 2
    command_main("so101-review")(["--options_path=/nonexistent.yaml"])  # in-process, read through capsys
    assert "Next:" in capsys.readouterr().err
    rows = [json.loads(line) for line in log.read_text()[len(before) :].splitlines()]
    this_test = "tests/test_next_steps.py::test_what_the_suites_commands_print_reaches_the_session_log"
    scripts = {row["script"] for row in rows if row["source"].startswith(this_test)}
    assert {"so101-judge", "so101-review"} <= scripts, rows


# --- failures across the commands: every next step they print parses ---------------------------


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A small finalised LeRobot dataset (two 1 s episodes, 96x128) by another tool, in a folder with a space."""
    root = tmp_path_factory.mktemp("next_steps") / "my datasets" / "fold"
    return write_synthetic_dataset(root, (Scenario.FOLD_AND_PUSH, Scenario.IDLE), frames_per_episode=30)


def _real_rig(tmp_path: Path) -> Path:
    ports = {
        "left_follower": str(tmp_path / "ttyUSB7"),
        "right_follower": "/dev/null-2",
        "left_leader": "",
        "right_leader": "",
    }
    path = tmp_path / "real.yaml"
    path.write_text(yaml.safe_dump({"id": "real", "ports": ports, "calibration": {"dir": str(tmp_path)}}))
    return path


def _not_a_file(tmp_path: Path, flag: str = "--config_path") -> str:
    """The command's file flag naming no file: the rig file (`--config_path`), or an options file."""
    return f"{flag}={tmp_path / 'missing.yaml'}"


def _a_file(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("not a folder\n")
    return tmp_path / "notes.txt"


def _record_into(folder: Callable[[Path, Path], Path], *extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda t, d: ["--dataset.repo_id=me/x", f"--dataset.root={folder(t, d)}", *extra]


# (script, its options from tmp_path and the dataset, the documented exit status)
Case = tuple[str, Callable[[Path, Path], list[str]], int]
ASYNC_AT_FAST_PACE = ["--policy.path=recorded", "--engine.kind=async", "--pace=fast"]
CASES: dict[str, Case] = {
    "judge_missing_options_file": (
        "so101-judge",
        lambda t, d: [_not_a_file(t, "--options_path"), f"--dataset.root={d}"],
        2,
    ),
    "review_missing_options_file": ("so101-review", lambda t, d: [_not_a_file(t, "--options_path")], 2),
    "report_missing_options_file": ("so101-report", lambda t, d: [_not_a_file(t, "--options_path")], 2),
    # Without a store beside it so101-review starts one (tests/evaluation/review); a missing one named is refused.
    "review_with_a_missing_store": (
        "so101-review",
        lambda t, d: [f"--dataset.root={d}", f"--store_path={t / 'none.sqlite'}", "--reviewer=ana"],
        2,
    ),
    "report_without_a_store": ("so101-report", lambda t, d: [f"--datasets=[{d}]"], 1),
    "doctor_missing_rig_file": ("so101-doctor", lambda t, d: [_not_a_file(t)], 2),
    "demo_output_is_a_file": ("so101-demo", lambda t, d: [f"--output_dir={_a_file(t)}"], 2),
    "replay_not_a_dataset": ("so101-replay", lambda t, d: [f"--dataset.root={t}"], 1),
    "replay_dataset_not_on_disk": ("so101-replay", lambda t, d: ["--dataset.repo_id=me/not_downloaded"], 1),
    "replay_async_engine_at_fast_pace": ("so101-replay", lambda t, d: [f"--dataset.root={d}", *ASYNC_AT_FAST_PACE], 1),
    "release_without_a_terminal": ("so101-release", lambda t, d: [], 1),
    "calibrate_wrong_port": (
        "so101-calibrate",
        lambda t, d: [f"--config_path={_real_rig(t)}", "--arms=left_follower"],
        1,
    ),
    "calibrate_unknown_arm": ("so101-calibrate", lambda t, d: ["--arms=left_elbow"], 2),
    "record_resume_without_a_dataset": (
        "so101-record",
        _record_into(lambda t, d: t / "none", "--dataset.resume=true"),
        1,
    ),
    "record_into_a_folder_with_a_dataset": ("so101-record", _record_into(lambda t, d: d), 1),
}


def _printed(script: str, argv: list[str], capsys) -> tuple[int, str]:
    code = command_main(script)(argv)
    captured = capsys.readouterr()
    return code, f"{captured.out}\n{captured.err}"


def _check_next_steps(script: str, text: str, *paths: Path) -> None:
    """The output names a next step, each one it names parses, and none cuts one of `paths` at a space."""
    found = commands_in(text, printed_by=script)
    assert found, f"{script} printed no next step:\n{text[-2000:]}"
    refused = [f"{c.text}: {why}" for c in found if (why := why_not(c)) is not None]
    assert refused == [], text[-2000:]
    values = [arg.partition("=")[2].strip("[]") for c in found for arg in c.args]
    cut = [v for v in values for path in map(str, paths) if v and path.startswith(v) and v != path and " " in path]
    assert cut == [], f"a path with a space is not quoted:\n{text[-2000:]}"


SLOW_CASES = {"record_into_a_folder_with_a_dataset"}  # connects the virtual rig before it refuses: ~9 s


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c for c in sorted(CASES)]
)
def test_each_failures_next_steps_parse(case, tmp_path, dataset, capsys):
    script, options, status = CASES[case]
    code, text = _printed(script, options(tmp_path, dataset), capsys)
    assert code == status, text
    assert "Traceback" not in text
    _check_next_steps(script, text, dataset)


@pytest.mark.parametrize(
    ("extra", "refusal"),
    [
        (["--run.max_estimated_cost_usd=0.0001"], "raise the limit: so101-judge"),
        (["--judge.model=claude-unpriced-1"], "run without a cost limit: so101-judge"),
    ],
    ids=["over_the_cost_limit", "unknown_price"],
)
def test_the_judges_refusals_print_a_command_that_goes_on(extra, refusal, dataset, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeMessagesServer() as server:
        store = f"--store_path={tmp_path / 's.sqlite'}"
        argv = [f"--dataset.root={dataset}", store, f"--judge.base_url={server.base_url}", "--judge.samples=1", *extra]
        code, text = _printed("so101-judge", argv, capsys)
        assert server.message_requests() == []  # refused before judging anything
    assert code == 1, text  # failed: nothing was sent, and the line says how to go on
    assert refusal in " ".join(text.split())
    _check_next_steps("so101-judge", text, dataset)


# --- so101-deploy's printed next steps, run as printed ---------------------------------------------


@pytest.fixture(scope="module")
def tiny_act(tmp_path_factory) -> Path:
    from policies.testing.tiny_policies import write_tiny_act

    return write_tiny_act(tmp_path_factory.mktemp("next_steps_act") / "checkpoint", chunk_size=10)


@pytest.mark.slow
def test_deploys_printed_next_steps_run_as_printed(tmp_path, tiny_act):
    rollouts = tmp_path / "rollouts"
    deploy = run(
        "so101-deploy",
        f"--config_path={rig_file(tmp_path)}",
        f"--policy.path={tiny_act}",
        "--policy.device=cpu",
        "--dataset.repo_id=test/eval",
        f"--dataset.root={rollouts}",
        "--dataset.vcodec=h264",
        "--session.num_episodes=2",
        "--session.episode_s=2",
        "--session.reset_s=0.5",
        timeout_s=300,
    )
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
    steps = [c for c in commands_in(deploy.stdout) if c.script in ("so101-judge", "so101-review", "so101-report")]
    assert [c.script for c in steps] == ["so101-judge", "so101-review", "so101-report"], deploy.stdout[-2000:]
    judge, review, report = steps
    assert judge.args == (f"--dataset.root={rollouts}",)
    user = tmp_path / "user"  # where the user pastes them: report's default output folder is relative
    user.mkdir()

    # As printed, with no API key: the documented refusal (exit 1: failed), naming the offline ways on.
    refused = run(judge.script, *judge.args, cwd=user)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "ANTHROPIC_API_KEY is not set" in refused.stderr
    assert "--scorer=heuristic" in refused.stderr

    # With a key, against the loopback Messages API (the test seam: --judge.base_url, one sample).
    with FakeMessagesServer(score_fn=lambda episode, criterion: 0.5) as server:
        judged = run(
            judge.script,
            *judge.args,
            f"--judge.base_url={server.base_url}",
            "--judge.samples=1",
            env={"ANTHROPIC_API_KEY": "test-key"},
            cwd=user,
        )
        assert server.problems() == []
        assert len(server.message_requests()) == 2  # one sample per rollout
    assert judged.returncode == 0, judged.stdout[-3000:] + judged.stderr[-3000:]
    assert "scored 2, failed 0" in " ".join(judged.stdout.split())

    # The review page serves the judged rollouts until Ctrl-C, its documented stop (exit 0).
    with ForegroundJob(review.script, *review.args, "--server.port=0", env={"USER": "tester"}) as job:
        job.wait_for("review page:")
        url = next(word for word in job.text.split() if word.startswith("http://127.0.0.1:"))
        assert httpx.get(url, timeout=30).status_code == 200
        job.signal_group(signal.SIGINT)
        assert job.finish() == 0, job.text[-3000:]
    assert "2 judged" in job.text

    # The report compares what was judged: it writes its files under the user's folder.
    reported = run(report.script, *report.args, cwd=user, timeout_s=300)
    assert reported.returncode == 0, reported.stdout[-3000:] + reported.stderr[-3000:]
    assert list(user.glob("outputs/reports/*/report.html")), sorted(p.name for p in user.rglob("*"))
