"""so101-review through its entry point: refusals before anything is opened, and a real served session."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from evaluation.commands.review import main
from evaluation.overrides import overrides_of
from evaluation.store import EvaluationStore
from robot.shell.exit_codes import Exit
from tests.support.commands import realtime_threads, stack_dump
from tests.support.review_pages import override_csrf
from tests.support.review_server import ReviewProcess

TOKEN = "command-test-token-0123456789"


def _said(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command printed, on either stream: its warnings (stdout) and its error line (stderr)."""
    captured = capsys.readouterr()
    return captured.out + captured.err


@pytest.fixture(autouse=True)
def _no_token_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SO101_REVIEW_TOKEN", raising=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "'::'", "fe80::1", "review.lab.example"])
def test_a_non_loopback_host_without_a_token_is_refused(host, dataset_root: Path, judged_store: Path, capsys):
    args = [f"--dataset.root={dataset_root}", f"--store_path={judged_store}", f"--server.host={host}"]
    assert main(args) == Exit.USAGE
    out = _said(capsys)
    assert f"refusing to serve on {host.strip(chr(39))}:" in out
    assert "SO101_REVIEW_TOKEN" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--server.access_token=short"], "use at least 16"),
        (["--server.port=70000"], "server.port=70000"),
        # A host is text as typed (robot/shell/text_options.py): `::` needs no quotes; without a token it is refused.
        (["--server.host=::"], "refusing to serve on ::: it is reachable from other machines"),
        (["--server.host=[::1]"], "server.host='[::1]' is not a host name or address"),
        (["--audit.fraction=0"], "audit.fraction=0"),
        (["--store_path={missing}"], "leave --store_path out to use the store beside the dataset"),
        (["--server.host=127.0.0.1", "--reviewer= "], None),
    ],
)
def test_bad_options_get_one_clear_line(
    args, message, dataset_root: Path, judged_store: Path, tmp_path, capsys, monkeypatch
):
    if message is None:  # no reviewer name anywhere
        monkeypatch.delenv("USER", raising=False)
        monkeypatch.delenv("USERNAME", raising=False)
        message = "no reviewer name"
    args = [a.format(missing=tmp_path / "none.sqlite") for a in args]
    store = [] if any(a.startswith("--store_path") for a in args) else [f"--store_path={judged_store}"]
    reviewer = [] if any(a.startswith("--reviewer") for a in args) else ["--reviewer=tester"]
    assert main([f"--dataset.root={dataset_root}", *store, *reviewer, *args]) == Exit.USAGE
    out = _said(capsys)
    assert message in out
    assert "Traceback" not in out


def test_a_token_on_the_command_line_is_warned_about_and_one_in_a_file_is_not(dataset_root: Path, tmp_path, capsys):
    missing = f"--store_path={tmp_path / 'none.sqlite'}"  # stops the command after the token checks
    assert (
        main([f"--dataset.root={dataset_root}", missing, "--reviewer=tester", f"--server.access_token={TOKEN}"])
        == Exit.USAGE
    )
    out = " ".join(_said(capsys).split())
    assert "warning: the access token on the command line is visible to every user of this machine (ps" in out
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    token_file.chmod(0o600)
    assert (
        main(
            [
                f"--dataset.root={dataset_root}",
                missing,
                f"--server.access_token_file={token_file}",
                "--server.host=0.0.0.0",
                "--reviewer=tester",
            ]
        )
        == Exit.USAGE
    )
    out = " ".join(_said(capsys).split())
    assert "warning" not in out
    assert "refusing to serve" not in out  # the file's token counts for a non-loopback host
    assert "no evaluation store at" in out


def test_a_missing_dataset_is_explained(tmp_path: Path, capsys):
    assert main([f"--dataset.root={tmp_path}", "--reviewer=tester"]) == Exit.FAILED
    assert "not a LeRobot dataset" in _said(capsys)
    assert main([]) == Exit.USAGE
    assert "dataset.root is required" in _said(capsys)


@pytest.mark.slow
def _as_a_background_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a script's `cmd &` hands its child


@pytest.mark.parametrize(
    ("signum", "start"),
    [(signal.SIGINT, None), (signal.SIGINT, _as_a_background_job), (signal.SIGTERM, None)],
    ids=["ctrl_c", "ctrl_c_started_with_sigint_ignored", "sigterm"],
)
@pytest.mark.slow
def test_served_on_all_interfaces_with_a_token_then_stopped(signum, start, dataset_root: Path, judged_store: Path):
    review = ReviewProcess(
        f"--dataset.root={dataset_root}",
        f"--store_path={judged_store}",
        "--server.host=0.0.0.0",
        "--server.port=0",
        "--reviewer=ana",
        env={"SO101_REVIEW_TOKEN": TOKEN},
        preexec_fn=start,
    )
    proc = review.proc
    try:
        url = review.url()
        assert url.endswith(f"/?token={TOKEN}")
        port = int(re.search(r":(\d+)/", url).group(1))
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/").status_code == 401
        client = httpx.Client(base_url=base, follow_redirects=True)
        page = client.get(f"/episodes/0?token={TOKEN}")
        assert page.status_code == 200
        csrf = override_csrf(page.text)
        form = {
            "csrf": csrf,
            "criterion": "R3",
            "score": "1",
            "reason": "view_ambiguous",
            "note": "",
            "expected_old": "0.5",
        }
        assert client.post("/episodes/0/overrides", data=form).status_code == 200  # after the redirect
        client.close()
    finally:
        proc.send_signal(signum)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stuck = realtime_threads()
            stack_dump(proc)  # the stacks arrive on its output
            review.reader.join(timeout=10)
            raise AssertionError(
                f"so101-review still running 60 s after {signum!r}:\n{review.output}\n{stuck}"
            ) from None
        review.reader.join(timeout=10)
    out = review.output
    assert code == 0, out
    assert "stopped" in out
    assert "Traceback" not in out
    with EvaluationStore(judged_store) as store:
        assert [(o.reviewer, o.new_score) for o in overrides_of(store, "fold_virtual")] == [("ana", 1.0)]
    time.sleep(0)  # nothing left running: the process has exited
