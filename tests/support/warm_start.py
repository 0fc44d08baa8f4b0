"""The product's commands started from a process that has already imported torch and LeRobot.

Every command a test runs would otherwise spend 3-8 s of CPU importing torch, torchvision,
transformers and LeRobot's dataset stack before its first line of work (tests/README.md: more than a
third of the suite's CPU). One server per test process imports them once and forks a child per
command. The child is the command as a user's shell starts it in every way the tests can see: its
own pid (signals, process groups, its command line and name in /proc), the console script's `main`
from the entry point, the product's own modules imported afresh, the given environment, working
folder, standard streams and signal dispositions, `sys.argv` and `__main__` as the console script
sets them, and the interpreter's exit (non-daemon threads joined, atexit handlers, streams flushed;
an uncaught Ctrl-C ends it by SIGINT). Only third-party libraries come pre-imported, and a command
whose environment differs from the server's in a variable those libraries might read at import is
executed for real instead (`needs_exec`). The product forks its own dataset writer the same way,
after the same imports.

    server = WarmStarter.get()                   # per test process, started on first use
    child = server.start(["/venv/bin/so101-record", "--help"], env=os.environ, stdout=fd)
    child.wait(timeout=60)                       # a Popen-like handle: pid, poll, wait, send_signal, kill

`SO101_TESTS_COLD_START=1` runs every command by exec, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.support import session_files

COLD_START_ENV = "SO101_TESTS_COLD_START"
# Third-party modules the commands import (torch alone is 2 s of CPU); never the product's own.
PRELOAD: tuple[str, ...] = (
    "numpy",
    "torch",
    "torchvision",
    "transformers",
    "cv2",
    "pyarrow",
    "av",
    "yaml",
    "draccus",
    "rich.console",
    "lerobot.datasets.lerobot_dataset",
    "lerobot.datasets.dataset_tools",
    "lerobot.motors.feetech",
    "lerobot.robots.so_follower",
    "lerobot.teleoperators.so_leader",
    "lerobot.policies.act.modeling_act",
    "lerobot.policies.smolvla.modeling_smolvla",
    "lerobot.async_inference.helpers",
    "anthropic",
    "fastapi",
    "uvicorn",
)
# Variables read at run time, never at import, by the libraries above: a command may differ here.
_RUNTIME_ENV_PREFIXES: tuple[str, ...] = ("SO101_", "ANTHROPIC_API_KEY")
_RUNTIME_ENV: frozenset[str] = frozenset(
    {"COLUMNS", "LINES", "TERM", "USER", "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "PWD", "OLDPWD"}
)
_RESET_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD)


STARTS = "command_starts"  # the session file (tests/support/session_files.py) counting how commands started


def needs_exec(env: dict[str, str]) -> str | None:
    """Why a command with `env` must be executed for real (a variable a library may read at import), or None.

    The commands count each start in the session's `STARTS` file (`count_start`).
    """
    base = os.environ
    changed = {k for k in env.keys() | base.keys() if env.get(k) != base.get(k)}
    unsafe = sorted(k for k in changed if k not in _RUNTIME_ENV and not k.startswith(_RUNTIME_ENV_PREFIXES))
    why = f"{COLD_START_ENV}=1" if os.environ.get(COLD_START_ENV) == "1" else None
    return why or (f"environment differs in {unsafe}" if unsafe else None)


def count_start(why_exec: str | None) -> None:
    """Count a command's start for the terminal summary: forked, or executed and why."""
    session_files.append(STARTS, {"exec": why_exec})


def summary_line() -> str:
    """How the session's commands started: forked by a warm-start server, or executed (and why)."""
    starts = [record["exec"] for record in session_files.read(STARTS)]
    reasons = sorted({why for why in starts if why})
    executed = sum(1 for why in starts if why)
    line = f"commands forked by a warm-start server: {len(starts) - executed}, executed: {executed}"
    return line + (f" ({'; '.join(reasons)})" if reasons else "")


class WarmProcess:
    """A forked command: the parts of `subprocess.Popen` the tests use, its status sent by the server."""

    def __init__(self, args: list[str], pid: int, status: socket.socket) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self.stdout = None
        self._status = status

    def poll(self) -> int | None:
        """The exit status if it has ended (negative: the signal that ended it), else None."""
        if self.returncode is None and select.select([self._status], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Until it ends; raises `subprocess.TimeoutExpired` after `timeout` seconds."""
        if self.returncode is None:
            if not select.select([self._status], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._read_status()
        return self.returncode

    def _read_status(self) -> None:
        data = b""
        while not data.endswith(b"\n"):
            chunk = self._status.recv(4096)
            if not chunk:
                raise RuntimeError(f"the warm-start server ended before reporting pid {self.pid}'s exit")
            data += chunk
        self.returncode = int(json.loads(data)["status"])
        self._status.close()

    def send_signal(self, signum: int) -> None:
        """Signal it, unless its exit was already reported (its pid may belong to another process then)."""
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


class WarmStarter:
    """The client of this test process's server (`python -m tests.support.warm_start`)."""

    _instance: WarmStarter | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="so101-warm-")
        self.socket_path = str(Path(self._folder) / "server.sock")
        command = [sys.executable, "-m", "tests.support.warm_start", self.socket_path]
        root = Path(__file__).resolve().parents[2]
        self._server = subprocess.Popen(command, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        ready = self._server.stdout.readline()
        if ready.strip() != b"READY":
            code = self._server.wait()
            raise RuntimeError(f"the warm-start server did not start (exit {code}): run {' '.join(command)}")
        atexit.register(self.close)

    @classmethod
    def get(cls) -> WarmStarter:
        """This test process's server, started on first use.

        Raises:
            RuntimeError: the server ended (never silently replaced: a crash there is a failure).
        """
        with cls._lock:
            if cls._instance is None:
                cls._instance = WarmStarter()
            elif (code := cls._instance._server.poll()) is not None:
                raise RuntimeError(f"the warm-start server ended (exit {code}); run with {COLD_START_ENV}=1 to bisect")
            return cls._instance

    def start(
        self,
        args: list[str],
        *,
        env: dict[str, str],
        cwd: str | None = None,
        stdin: int,
        stdout: int,
        stderr: int,
        new_session: bool = False,
        default_signals: bool = False,
    ) -> WarmProcess:
        """Fork `args` (a console script's path and its arguments) with these standard streams (fds)."""
        request = {"args": args, "env": env, "cwd": cwd or os.getcwd(), "new_session": new_session}
        request["default_signals"] = default_signals
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.socket_path)
        socket.send_fds(connection, [json.dumps(request).encode() + b"\n"], [stdin, stdout, stderr])
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = connection.recv(4096)
            if not chunk:
                raise RuntimeError(f"the warm-start server refused {args[0]}")
            reply += chunk
        return WarmProcess(args, int(json.loads(reply)["pid"]), connection)

    def close(self) -> None:
        """Stop the server (its running children are left to their tests)."""
        if self._server.poll() is None:
            self._server.terminate()
            self._server.wait(timeout=30)


# --- the server -----------------------------------------------------------------------------------


def _serve(socket_path: str) -> None:
    ignored = {s for s in _RESET_SIGNALS if signal.getsignal(s) == signal.SIG_IGN}
    for name in PRELOAD:
        __import__(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    reaped_r, reaped_w = os.pipe()
    os.set_blocking(reaped_w, False)
    signal.set_wakeup_fd(reaped_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children: dict[int, socket.socket] = {}
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    while True:
        readable = select.select([listener, reaped_r], [], [])[0]
        if reaped_r in readable:
            os.read(reaped_r, 4096)
        _reap(children)
        if listener in readable:
            connection, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                listener.close()
                os.close(reaped_r)
                os.close(reaped_w)
                _child(request, fds, connection, ignored)
            for fd in fds:
                os.close(fd)
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            children[pid] = connection


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is not None:
            with contextlib.suppress(OSError):  # the test process is gone
                connection.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            connection.close()


def _child(request: dict, fds: list[int], connection: socket.socket, ignored: set[int]) -> None:
    """In the forked child: become the command (never returns)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for s in _RESET_SIGNALS:
            keep_ignored = s in ignored and not request["default_signals"]
            signal.signal(s, signal.SIG_IGN if keep_ignored else signal.SIG_DFL)
        if signal.getsignal(signal.SIGINT) == signal.SIG_DFL:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # as the interpreter's start does
        connection.close()
        if request["new_session"]:
            os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        _name_process(request["args"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        _new_streams()
        if os.environ.get("PYTHONFAULTHANDLER"):
            import faulthandler

            faulthandler.enable()
        code = _run_console_script(request["args"])
    except BaseException:  # nothing may return into the server's loop
        import traceback

        traceback.print_exc()
    _exit(code)


def _name_process(args: list[str]) -> None:
    """The command line and name a user's exec would show in /proc and ps: tests find leftovers by it."""
    import setproctitle

    setproctitle.setproctitle(" ".join([sys.executable, *args]))  # a console script runs as `python <script> ...`
    setproctitle.setthreadtitle(Path(args[0]).name[:15])  # /proc/<pid>/comm: the script's name, as exec sets it


def _new_streams() -> None:
    """sys.stdin/stdout/stderr on fds 0-2 as the interpreter would open them (tty: line-buffered)."""
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    encoding = sys.stdout.encoding  # the server's, from the same locale a started interpreter reads

    def text(fd: int, mode: str, line: bool, errors: str) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        # PYTHONUNBUFFERED: the text layer writes straight to the file, as `python -u` does.
        buffered = io.BufferedReader(raw) if mode == "r" else raw if unbuffered else io.BufferedWriter(raw)
        wrapper = io.TextIOWrapper(buffered, encoding=encoding, errors=errors, line_buffering=line)
        wrapper.reconfigure(write_through=unbuffered)
        return wrapper

    sys.stdin = sys.__stdin__ = text(0, "r", False, "strict")
    sys.stdout = sys.__stdout__ = text(1, "w", os.isatty(1), "strict")
    sys.stderr = sys.__stderr__ = text(2, "w", True, "backslashreplace")


def _run_console_script(args: list[str]) -> int:
    """What the console script `args[0]` does: `sys.exit(main())` with the entry point's main."""
    import types
    from importlib.metadata import entry_points

    name = Path(args[0]).name
    (entry,) = [e for e in entry_points(group="console_scripts") if e.name == name]
    main_module = types.ModuleType("__main__")
    main_module.__file__ = args[0]  # a writer the command spawns re-runs the script, as a user's would
    main_module.__spec__ = None
    sys.modules["__main__"] = main_module
    sys.argv = list(args)
    try:
        try:
            result = entry.load()()
        except SystemExit as stop:
            result = stop.code
    except KeyboardInterrupt:
        import traceback

        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # an uncaught Ctrl-C ends a Python process by SIGINT
        time.sleep(1)
        return 130
    except BaseException:  # an uncaught error: traceback and exit 1, as the interpreter does
        sys.excepthook(*sys.exc_info())
        return 1
    if result is None:
        return 0
    if isinstance(result, int):
        return result
    print(result, file=sys.stderr)
    return 1


def _finish() -> None:
    """The interpreter's exit: join non-daemon threads, run atexit handlers, flush the streams."""
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _exit(code: int) -> None:
    _finish()
    os._exit(code & 0xFF)


if __name__ == "__main__":
    _serve(sys.argv[1])
