"""so101-replay runs on the replay tests' recording, and the report each leaves.

dry = replay(recording, recording.root, tmp_path / "report", "--dataset.episodes=all")   # a process
same = replay_here(capsys, recording, root, out, "--policy.path=recorded")               # main(argv) here
dry.report["episodes"][0]                                                                # report.json
"""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from policies.commands.replay import main
from tests.support.commands import run
from tests.support.recordings import Recording


@dataclass(frozen=True)
class Replay:
    """One so101-replay run: the process and its report."""

    result: subprocess.CompletedProcess[str]
    report: dict
    html: str


def replay(recording: Recording, root: Path, out: Path, *args: str, timeout_s: float = 180.0) -> Replay:
    """so101-replay on `root` with the recording's rig, the report in `out`."""
    result = run(
        "so101-replay",
        f"--config_path={recording.rig_file}",
        f"--dataset.root={root}",
        f"--report.output_dir={out}",
        "--report.stills=1",
        *args,
        timeout_s=timeout_s,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Replay(result, _strict_json(out / "report.json"), (out / "report.html").read_text())


def replay_here(capsys: pytest.CaptureFixture[str], recording: Recording, root: Path, out: Path, *args: str) -> Replay:
    """The same, through the command's `main(argv)` in this process (what the script runs): no interpreter start."""
    argv = [
        f"--config_path={recording.rig_file}",
        f"--dataset.root={root}",
        f"--report.output_dir={out}",
        "--report.stills=1",
        *args,
    ]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.out[-3000:] + captured.err[-3000:]
    result = subprocess.CompletedProcess(argv, code, captured.out, captured.err)
    return Replay(result, _strict_json(out / "report.json"), (out / "report.html").read_text())


def _strict_json(path: Path) -> dict:
    """report.json parsed, refusing NaN and Infinity (which are not JSON)."""

    def refuse(name: str) -> None:
        raise ValueError(f"{path.name} holds {name}, which is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)
