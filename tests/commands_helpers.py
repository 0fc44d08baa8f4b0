"""Run the product's console scripts the way a user does, from the venv's bin folder."""

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent


def script(name: str) -> str:
    path = BIN / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: is the project installed (pip install -e .)?")
    return str(path)


def run(name: str, *args: str, timeout_s: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([script(name), *args], capture_output=True, text=True, timeout=timeout_s, env=os.environ)


def virtual_rig_file(tmp_path: Path, **virtual) -> Path:
    """A rig YAML for a virtual rig living entirely under tmp_path."""
    rig = {
        "id": "e2e_rig",
        "calibration": {"dir": str(tmp_path / "calibration")},
        # The virtual rig's slack for pseudo-terminal latency on a busy machine (as in virtual.yaml).
        "bus": {"reply_timeout_ms": 20.0, "read_deadline_ms": 50.0},
        # realtime_priority as in virtual.yaml: stock LeRobot's connect-time reads wait ~34 ms once, with
        # no retry, and an emulator at normal priority late in a 2-core suite missed that (CI, stop 12).
        "virtual": {
            "runtime_dir": str(tmp_path / "run"),
            "state_dir": str(tmp_path / "state"),
            "realtime_priority": 9,
            **virtual,
        },
    }
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path


class SimProcess:
    """`so101-sim --json=true` in the background, ready when its READY line has arrived."""

    def __init__(self, rig_file: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [script("so101-sim"), f"--config_path={rig_file}", "--json=true", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.ready = self._read_ready()

    def _read_ready(self, timeout_s: float = 60.0) -> dict:
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if selector.select(timeout=0.5):
                line = self.process.stdout.readline()
                if line:
                    return json.loads(line)
                break
        self.stop()
        raise RuntimeError(f"so101-sim did not become ready: {self.process.stderr.read()}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(2)  # Ctrl-C
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
