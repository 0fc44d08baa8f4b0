"""Run the product's console scripts the way a user does, from the venv's bin folder."""

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from robot.virtual.client import VirtualRigClient
from tests.support import next_steps, warm_start

BIN = Path(sys.executable).parent


def script(name: str) -> str:
    path = BIN / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: is the project installed (pip install -e .)?")
    return str(path)


def run(
    name: str, *args: str, timeout_s: float = 240.0, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The command's run to its end; `env` adds to the environment. The next steps it printed are logged.

    Forked by this process's warm-start server (tests/support/warm_start.py) unless the environment
    asks for a real exec; either way the result is what `subprocess.run(..., capture_output=True,
    text=True)` returns, and a timeout kills the command and raises `subprocess.TimeoutExpired`.
    """
    command = [script(name), *args]
    environment = os.environ | (env or {})
    why_exec = warm_start.needs_exec(environment)
    warm_start.count_start(why_exec)
    if why_exec:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=environment, cwd=cwd)
    else:
        result = _run_warm(command, environment, cwd, timeout_s)
    next_steps.record(f"{result.stdout}\n{result.stderr}", f"{next_steps.current_test()} ({name})", name)
    return result


def _run_warm(
    command: list[str], env: dict[str, str], cwd: Path | None, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        folder = None if cwd is None else str(cwd)
        child = warm_start.WarmStarter.get().start(command, env=env, cwd=folder, stdin=0, stdout=out_w, stderr=err_w)
    finally:
        os.close(out_w)
        os.close(err_w)
    output = {out_r: b"", err_r: b""}
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        for fd in output:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            if time.monotonic() > deadline:
                child.kill()
                child.wait()
                for key in list(selector.get_map().values()):
                    os.close(key.fd)
                raise subprocess.TimeoutExpired(command, timeout_s, output[out_r], output[err_r])
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                chunk = os.read(key.fd, 65536)
                output[key.fd] += chunk
                if not chunk:
                    selector.unregister(key.fd)
                    os.close(key.fd)
    code = child.wait(timeout=max(5.0, deadline - time.monotonic()))

    def text(data: bytes) -> str:  # subprocess's text mode: the locale's encoding, universal newlines
        return data.decode().replace("\r\n", "\n").replace("\r", "\n")

    return subprocess.CompletedProcess(command, code, text(output[out_r]), text(output[err_r]))


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
            "realtime_priority": 11,
            **virtual,
        },
    }
    path = tmp_path / "rig.yaml"
    path.write_text(yaml.safe_dump(rig))
    return path


class SimProcess:
    """`so101-sim --json=true` in the background, ready when its READY line has arrived.

    Its stderr goes to a temporary file (a pipe nobody reads would fill and block the sim); `stderr`
    holds that text once it is stopped. A context manager: leaving it stops the sim.
    """

    def __init__(self, rig_file: Path, *extra: str) -> None:
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 (stop closes it)
        self.stderr = ""
        self.process = subprocess.Popen(
            [script("so101-sim"), f"--config_path={rig_file}", "--json=true", *extra],
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            text=True,
        )
        self.ready = self._read_ready()

    def __enter__(self) -> "SimProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

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
        raise RuntimeError(f"so101-sim did not become ready (exit {self.process.returncode}): {self.stderr}")

    def stop(self) -> int:
        """Ctrl-C it (SIGKILL 10 s later) and collect its stderr; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(2)  # Ctrl-C
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._stderr_file.closed:
            self._stderr_file.seek(0)
            self.stderr = self._stderr_file.read().decode(errors="replace")
            self._stderr_file.close()
            next_steps.record(self.stderr, f"{next_steps.current_test()} (so101-sim)", "so101-sim")
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


@contextmanager
def sim_client(rig_file: Path, *extra: str) -> Iterator[VirtualRigClient]:
    """A `SimProcess` for `rig_file` and a client connected to it; both closed on the way out."""
    with SimProcess(rig_file, *extra) as sim, VirtualRigClient(Path(sim.ready["control"])) as client:
        yield client


# --- a command as a terminal's foreground job, for stop signals -----------------------------------

# Starts the script with SIGINT, SIGTERM and SIGHUP at their defaults (an ignored signal stays
# ignored across exec, e.g. under nohup, and the command then rightly leaves it ignored).
_DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


class ForegroundJob:
    """A console script in a process group of its own, as a shell runs a job; its output collected as it comes.

    `terminal`: on a pseudo-terminal (live status lines, keys) instead of pipes. `signal_group` then
    signals the whole group, as a terminal's Ctrl-C or hangup does. A context manager: leaving it
    kills the group if it still runs (`kill`).
    """

    def __init__(self, name: str, *args: str, terminal: bool = False, env: dict[str, str] | None = None) -> None:
        import threading

        environment = os.environ | {"PYTHONUNBUFFERED": "1", "COLUMNS": "200", "TERM": "xterm"} | (env or {})
        self._master: int | None = None
        if terminal:
            import pty

            self._master, write_end = pty.openpty()
            stdin, source = write_end, self._master
        else:
            source, write_end = os.pipe()
            stdin = os.open(os.devnull, os.O_RDONLY)
        try:
            self.process = _start_job([script(name), *args], environment, stdin, write_end)
        finally:
            for fd in {stdin, write_end}:
                os.close(fd)
        self._pipe = None if terminal else source
        self.output = b""
        self._name = name
        self._logged = False
        self._reader = threading.Thread(target=self._read, args=(source,), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        if fd == self._pipe:  # a pipe's read end is this reader's (a terminal's master is closed by finish/kill)
            os.close(fd)

    def __enter__(self) -> "ForegroundJob":
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    @property
    def text(self) -> str:
        """Everything it printed so far."""
        return self.output.decode(errors="replace")

    def wait_for(self, text: str, timeout_s: float = 180.0) -> None:
        """Until `text` appears in the output (raises with the output's tail if it does not, or if the job ends)."""
        self.wait_until(lambda: text.encode() in self.output, timeout_s, repr(text))

    def wait_until(self, predicate, timeout_s: float, what: str) -> None:
        """Poll `predicate` while the job runs (raises with the output's tail after `timeout_s`, or if it ends)."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if self.process.poll() is not None:
                self._reader.join(timeout=5)
                if predicate():
                    return
                raise AssertionError(f"exited ({self.process.returncode}) before {what}:\n{self.text[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout_s:.0f} s:\n{self.text[-3000:]}")
            time.sleep(0.05)

    def signal_group(self, signum: int) -> None:
        """Send `signum` to the job's whole process group."""
        os.killpg(self.process.pid, signum)

    def children(self) -> list[int]:
        """The pids whose parent is the job."""
        return [pid for pid, parent in _parents().items() if parent == self.process.pid]

    def finish(self, timeout_s: float = 180.0) -> int:
        """Wait for the exit (killing the group after `timeout_s`); returns the exit status."""
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stuck = realtime_threads()
            self.kill()
            raise AssertionError(f"still running {timeout_s:.0f} s later:\n{self.text[-3000:]}\n{stuck}") from None
        self._reader.join(timeout=5)
        if self._master is not None:
            os.close(self._master)
            self._master = None
        self._log_next_steps()
        return code

    def kill(self) -> None:
        """SIGKILL the group if it still runs, and close its terminal (cleanup, also after a failure)."""
        import contextlib

        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 9)
            self.process.wait(timeout=30)
        if self._master is not None:
            os.close(self._master)
            self._master = None
        self._log_next_steps()

    def _log_next_steps(self) -> None:
        if not self._logged:
            self._logged = True
            next_steps.record(self.text, f"{next_steps.current_test()} ({self._name})", self._name)


def _start_job(command: list[str], env: dict[str, str], stdin: int, output: int):
    """A foreground job: a session of its own, SIGINT, SIGTERM and SIGHUP at their defaults."""
    why_exec = warm_start.needs_exec(env)
    warm_start.count_start(why_exec)
    if not why_exec:
        return warm_start.WarmStarter.get().start(
            command, env=env, stdin=stdin, stdout=output, stderr=output, new_session=True, default_signals=True
        )
    return subprocess.Popen(
        [sys.executable, "-c", _DEFAULT_SIGNALS, *command],
        stdin=stdin,
        stdout=output,
        stderr=output,
        env=env,
        start_new_session=True,
    )


def _parents() -> dict[int, int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return parents


def process_state(pid: int) -> str | None:
    """A process's state letter (R, S, T for stopped, Z...), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def wait_exited(pids: Iterable[int], timeout_s: float, what: str) -> None:
    """Until every one of `pids` is gone or a zombie (raises AssertionError naming `what` after `timeout_s`)."""
    pids = list(pids)
    wait_until(lambda: all(process_state(pid) in (None, "Z") for pid in pids), timeout_s, what)


def realtime_threads() -> str:
    """Every thread on the machine in a realtime class, one per line (why a process stalled under load).

    A thread at SCHED_FIFO or SCHED_RR that spins starves everything at ordinary priority on its core;
    with a CPU hog on the other, a stuck subprocess is the visible symptom.
    """
    rows = subprocess.run(
        ["ps", "-eLo", "pid,tid,ppid,cls,rtprio,pcpu,stat,comm,args"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    realtime = [row for row in rows[1:] if row.split()[3:4] in (["FF"], ["RR"])]
    return "realtime threads now:\n" + "\n".join([rows[0], *realtime]) if realtime else "no realtime threads now"


def stack_dump(process: subprocess.Popen, settle_s: float = 3.0) -> None:
    """Ask a Python child started with PYTHONFAULTHANDLER=1 to print every thread's stack (SIGABRT), then kill it."""
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGABRT)
    try:
        process.wait(timeout=settle_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def wait_until(predicate, timeout_s: float, what: str) -> None:
    """Poll `predicate` until it holds (raises AssertionError naming `what` after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.05)
