"""The live view's cost to the loop: so101-teleop's p99 period deviation with the view on and off, side by side.

    for each of N pairs (the order alternating pair by pair):
        so101-teleop --duration_s=S --json=true                               (view off: the anchor)
        so101-teleop --duration_s=S --json=true --view.enabled=true --view.port=0
            while a client polls the page as a browser does: state.json and every camera's JPEG,
            at the view's refresh rate
    report the median over the pairs of each run's p99 period deviation (and achieved rate)

The rig is hardware_configs/virtual.yaml: four emulated arms and three 640x480 synthetic cameras,
so the view JPEG-encodes three camera pictures per refresh. A measurement, not a test.

    .venv/bin/python -m benchmarks.live_view [--pairs 3] [--seconds 15] [--quick] [--out PATH]
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from robot.config import DEFAULT_RIG_FILE

BIN = Path(sys.executable).parent
REFRESH_FPS = 10.0  # the view's default


def _browser(output: list[str], stop: threading.Event, fetched: list[int]) -> None:
    """Poll the page's state and pictures at the refresh rate, once the command has printed the address."""
    url = None
    while url is None and not stop.is_set():
        match = re.search(r"live view: (http://\S+)", "".join(output))
        url = match.group(1) if match else None
        time.sleep(0.05)
    while not stop.is_set():
        try:
            with urllib.request.urlopen(url + "state.json", timeout=5) as reply:
                cameras = json.loads(reply.read())["cameras"]
            for name in cameras:
                with urllib.request.urlopen(f"{url}frame/{name}.jpg", timeout=5) as reply:
                    reply.read()
            fetched[0] += 1
        except OSError:
            pass  # the session is starting or ending
        time.sleep(1.0 / REFRESH_FPS)


def bench_rig(folder: Path) -> Path:
    """hardware_configs/virtual.yaml, pre-calibrated, with its calibration and ptys under `folder`."""
    rig = yaml.safe_load(DEFAULT_RIG_FILE.read_text())
    rig["calibration"]["dir"] = str(folder / "calibration")
    rig["virtual"] |= {"runtime_dir": str(folder / "run"), "calibrated": True}
    path = folder / "rig.yaml"
    path.write_text(yaml.safe_dump(rig, sort_keys=False))
    return path


def one_run(rig: Path, seconds: float, view: bool) -> dict:
    """One so101-teleop run; its JSON summary, plus how many page refreshes the client fetched."""
    command = [str(BIN / "so101-teleop"), f"--config_path={rig}", f"--duration_s={seconds}", "--json=true"]
    if view:
        command += ["--view.enabled=true", "--view.port=0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    stop, fetched = threading.Event(), [0]

    def read_stderr() -> None:
        for line in process.stderr:
            lines.append(line)

    readers = [threading.Thread(target=read_stderr, daemon=True)]
    if view:
        readers.append(threading.Thread(target=_browser, args=(lines, stop, fetched), daemon=True))
    for reader in readers:
        reader.start()
    stdout = process.stdout.read()  # stderr is the reader thread's (communicate() would read it too)
    process.wait(timeout=seconds + 180)
    stop.set()
    if process.returncode != 0:
        raise SystemExit(f"so101-teleop exited {process.returncode}: {''.join(lines)[-2000:]}")
    summary = json.loads(stdout)
    return {
        "view": view,
        "p99_ms": summary["period_deviation_p99_ms"],
        "achieved_hz": summary["achieved_hz"],
        "ticks": summary["ticks"],
        "page_refreshes": fetched[0],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--quick", action="store_true", help="one pair of 6 s runs")
    parser.add_argument("--out", type=Path, default=Path("outputs/bench/live_view.json"))
    args = parser.parse_args(argv)
    pairs, seconds = (1, 6.0) if args.quick else (args.pairs, args.seconds)
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        rig = bench_rig(Path(folder))
        for pair in range(pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for view in order:
                runs.append(one_run(rig, seconds, view))
                print(json.dumps(runs[-1]), flush=True)
    off = statistics.median(r["p99_ms"] for r in runs if not r["view"])
    on = statistics.median(r["p99_ms"] for r in runs if r["view"])
    summary = [
        {
            "benchmark": "live_view",
            "metric": "loop p99 period deviation, view on (anchor: off)",
            "unit": "ms",
            "ours": on,
            "anchor": off,
            "anchor_name": "view off, same run",
            "target": "within 1 ms of off",
        }
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": runs, "summary": summary}, indent=2))
    print(
        f"\n| view | p99 period deviation, ms (median of {pairs}) |\n|---|---|\n| off | {off:.2f} |\n| on | {on:.2f} |"
    )


if __name__ == "__main__":
    main()
