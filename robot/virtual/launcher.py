"""Start the virtual rig as a child process and wait until it is ready.

    with VirtualRigProcess(VirtualRigConfig(runtime_dir=tmp)) as rig:
        follower = SOFollower(SOFollowerConfig(port=rig.ports["left_follower"], ...))
        rig.client().play("cloth_fold")

The child prints one JSON line when every port has answered a ping; until then nothing may talk
to the ports (a slow start on a loaded machine otherwise desynchronises the SDK). Exit sends
SIGTERM, which removes the links and the socket, and saves the motors' flash.
"""

import json
import logging
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from robot.errors import RobotError
from robot.virtual.client import VirtualRigClient
from robot.virtual.config import VirtualRigConfig, config_to_json

logger = logging.getLogger(__name__)
READY_TIMEOUT_S = 60.0
# Set for the server process: the launcher's pid, which it must not outlive (`server.die_with_parent`).
LAUNCHER_PID_ENV = "SO101_VIRTUAL_LAUNCHER_PID"


class VirtualRigStartError(RobotError, RuntimeError):
    """The virtual rig's process did not come up."""


@dataclass(frozen=True)
class VirtualRigEndpoints:
    """Where a running virtual rig can be reached."""

    ports: dict[str, str]  # bus name -> device path, e.g. "left_follower" -> ".../left_follower"
    control: Path  # the control socket

    def client(self, timeout_s: float = 5.0) -> VirtualRigClient:
        """A new control connection."""
        return VirtualRigClient(self.control, timeout_s=timeout_s)


class VirtualRigProcess:
    """A virtual rig in a child process, as a context manager."""

    def __init__(self, config: VirtualRigConfig, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self.config = config
        self.ready_timeout_s = ready_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self.endpoints: VirtualRigEndpoints | None = None

    @property
    def ports(self) -> dict[str, str]:
        """Bus name -> device path (after start)."""
        return self._require().ports

    def client(self, timeout_s: float = 5.0) -> VirtualRigClient:
        """A new control connection (after start)."""
        return self._require().client(timeout_s)

    @property
    def pid(self) -> int | None:
        """The server process's pid while it runs."""
        return self._process.pid if self._process is not None else None

    def _require(self) -> VirtualRigEndpoints:
        if self.endpoints is None:
            raise VirtualRigStartError("the virtual rig is not running; use it inside `with VirtualRigProcess(...)`")
        return self.endpoints

    def start(self) -> VirtualRigEndpoints:
        """Spawn the server and wait for its READY line."""
        command = [sys.executable, "-m", "robot.virtual.server", config_to_json(self.config)]
        # stderr to a file, not a pipe: nobody reads it while the rig runs, and a full pipe would
        # block the server in the middle of a reply.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        env = {**os.environ, LAUNCHER_PID_ENV: str(os.getpid())}
        # A session of its own: a terminal's Ctrl-C or hangup reaches the command's whole process group,
        # and the rig must outlive the signal long enough for the command's safe exit (rest, release).
        # It still goes when the command goes (die_with_parent), or when stopped here.
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=self._stderr, env=env, start_new_session=True
        )
        stdout = self._process.stdout
        if stdout is None:
            raise VirtualRigStartError("no stdout pipe to the virtual rig process")
        selector = selectors.DefaultSelector()
        selector.register(stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.ready_timeout_s
        line = b""
        while time.monotonic() < deadline and b"\n" not in line:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            # os.read, not the buffered file: a buffered read may swallow the line unseen by select.
            chunk = os.read(stdout.fileno(), 4096)
            if not chunk:
                break
            line += chunk
        selector.close()
        try:
            message = json.loads(line.split(b"\n")[0]) if line else {}
        except json.JSONDecodeError:
            message = {"ready": False, "error": line.decode(errors="replace")}
        if not message.get("ready"):
            stderr = self._stderr_tail()
            self.stop()
            reason = message.get("error") or f"no READY line within {self.ready_timeout_s:.0f} s"
            raise VirtualRigStartError(f"the virtual rig did not start: {reason}\n{stderr}".rstrip())
        self.endpoints = VirtualRigEndpoints(ports=dict(message["ports"]), control=Path(message["control"]))
        return self.endpoints

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            return self._stderr.read().decode(errors="replace")[-2000:]
        except (OSError, ValueError):
            return ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not finish within 5 s."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                logger.warning("virtual rig pid %d ignored SIGTERM; killing it", process.pid)
                process.kill()
                process.wait(timeout=5.0)
        if process.stdout is not None:
            process.stdout.close()
        self._process = None
        self.endpoints = None

    def __enter__(self) -> "VirtualRigProcess":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
