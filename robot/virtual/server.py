"""The virtual rig's server: every bus on its own pseudo-terminal, plus the control socket.

    client (LeRobot, scservo_sdk) --pty--> PtyPort --bytes--> VirtualRigModel.feed --> emissions
         ^                                                                                |
         +------------------------- due-time heap <---------------------------------------+
    control client --unix socket--> FrontServer --forwards--> each bus's ControlHandler

One process per bus (four buses answer in parallel, as four USB adapters do), each one thread and
one `select()` loop (µs timeouts: epoll rounds to whole ms, too coarse for wire timing), each in a
session of its own and at SCHED_FIFO when permitted (robot/virtual/scheduling.py: a busy host must
not silence a bus); a front process owns the public control socket. Every process builds the same
model (same seed), so the operator's hands and the cloth agree across buses.
Prints one JSON line `{"ready": true, "ports": {...}, "control": ...}` on stdout once a ping
round trip has worked on every port.
"""

import ctypes
import gc
import heapq
import itertools
import json
import logging
import multiprocessing
import multiprocessing.process
import os
import selectors
import signal
import sys
import termios
import time
import tty
from multiprocessing.connection import Connection
from pathlib import Path

from robot.joints import ARM_NAMES
from robot.stop_flag import StopFlag
from robot.virtual.bus import as_transfers
from robot.virtual.config import VirtualRigConfig, config_from_json, default_runtime_dir, link_names
from robot.virtual.control import ControlHandler
from robot.virtual.front import FrontServer
from robot.virtual.json_socket import JsonLineSocket
from robot.virtual.launcher import LAUNCHER_PID_ENV
from robot.virtual.protocol import Instruction, encode_instruction
from robot.virtual.pty_port import PtyPort
from robot.virtual.rig_model import VirtualRigModel
from robot.virtual.scheduling import prioritise_bus_process

logger = logging.getLogger(__name__)
CONTROL_SOCKET = "control.sock"
_FLASH_CHECK_S = 1.0
_TICK_PLAYING_S = 0.01
_TICK_IDLE_S = 0.1
_SELF_TEST_TIMEOUT_S = 10.0
_PR_SET_PDEATHSIG = 1


class PtyServer:
    """Serves a `VirtualRigModel` on pseudo-terminals; implements the control API's port ops."""

    def __init__(self, model: VirtualRigModel, runtime_dir: Path, buses: list[str], control_path: Path) -> None:
        self.model = model
        self.runtime_dir = runtime_dir
        self.buses = buses
        self.control_path = control_path
        links = link_names(model.config)
        self._ports = {name: PtyPort(runtime_dir / links[name]) for name in buses}
        self._heap: list[tuple[float, int, str, bytes]] = []
        self._order = itertools.count()
        self._selector = selectors.SelectSelector()
        self._handler = ControlHandler(model, self)
        self._control = JsonLineSocket(control_path, self._handler.handle)
        self._stop = StopFlag()  # set from SIGTERM's handler: no lock (see robot/stop_flag.py)

    # --- PortOps ---------------------------------------------------------------------------

    def ports(self) -> dict[str, str]:
        """Bus name -> stable link path."""
        return {name: str(port.link) for name, port in self._ports.items()}

    def hangup(self, bus: str) -> None:
        """Close the pty: the client's next read or write fails as if unplugged."""
        port = self._ports[bus]
        if port.is_open:
            self._selector.unregister(port.master_fd)
            port.close(remove_link=True)
        self._heap = [item for item in self._heap if item[2] != bus]
        heapq.heapify(self._heap)

    def reopen(self, bus: str) -> None:
        """A new pty under the same link (the client must reopen the port)."""
        port = self._ports[bus]
        if not port.is_open:
            port.open()
            self._selector.register(port.master_fd, selectors.EVENT_READ, ("bus", bus))

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Create the ptys, links and the control socket."""
        self.runtime_dir.mkdir(parents=True, exist_ok=True)
        for name, port in self._ports.items():
            port.open()
            self._selector.register(port.master_fd, selectors.EVENT_READ, ("bus", name))
        self._control.open(self._selector)

    def stop(self) -> None:
        """Ask the loop to finish (thread-safe, signal-safe)."""
        self._stop.set()

    def close(self) -> None:
        """Remove the ptys, links and socket; keep the motors' flash."""
        self.model.save_flash(self.buses)
        for port in self._ports.values():
            port.close(remove_link=True)
        self._control.close()
        self._selector.close()

    def run(self) -> None:
        """Serve until `stop()`."""
        flash = self.model.flash_signature(self.buses)
        next_flash_check = time.monotonic() + _FLASH_CHECK_S
        next_tick = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            self._deliver_due(now)
            if now >= next_tick:
                # Between packets too: the operator's hands move and joints settle, so the first
                # packet after a pause is answered as fast as any other.
                try:
                    self.model.tick(now, self.buses)
                except Exception:
                    logger.exception("virtual rig: error while advancing the mechanics")
                playing = self.model.operator.status(now).get("playing")
                next_tick = now + (_TICK_PLAYING_S if playing else _TICK_IDLE_S)
            timeout = max(0.0, min(0.2, next_tick - now))
            if self._heap:
                timeout = max(0.0, min(timeout, self._heap[0][0] - now))
            for key, _ in self._selector.select(timeout):
                kind, name = key.data
                try:
                    if kind == "bus":
                        self._on_bus(name)
                    else:
                        self._control.on_ready(key)
                except Exception:
                    # An emulator bug must not silently take every port down: log it, keep serving.
                    logger.exception("virtual rig: error while serving %s %s", kind, name)
            if now >= next_flash_check:
                next_flash_check = now + _FLASH_CHECK_S
                signature = self.model.flash_signature(self.buses)
                if signature != flash:
                    flash = signature
                    self.model.save_flash(self.buses)

    def _deliver_due(self, now: float) -> None:
        while self._heap and self._heap[0][0] <= now:
            _, _, bus, data = heapq.heappop(self._heap)
            port = self._ports[bus]
            if port.is_open:
                port.write(data)

    def _on_bus(self, bus: str) -> None:
        port = self._ports[bus]
        data = port.read()
        if not data:
            return
        baud = port.baud()
        model_bus = self.model.buses[bus]
        if baud is not None:
            model_bus.set_port_baud(baud)
        for emission in as_transfers(self.model.feed(bus, data, time.monotonic())):
            heapq.heappush(self._heap, (emission.t_s, next(self._order), bus, emission.data))
        if model_bus.hung_up:
            self.hangup(bus)


def self_test(ports: dict[str, str], timeout_s: float = _SELF_TEST_TIMEOUT_S) -> None:
    """Ping motor 1 through every link, as a client would, or raise RuntimeError."""
    ping = encode_instruction(1, Instruction.PING)
    for bus, link in ports.items():
        fd = os.open(link, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            tty.setraw(fd)
            attrs = termios.tcgetattr(fd)
            attrs[4] = attrs[5] = termios.B1000000
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
            os.write(fd, ping)
            deadline = time.monotonic() + timeout_s
            reply = b""
            while len(reply) < 6 and time.monotonic() < deadline:
                try:
                    reply += os.read(fd, 64)
                except BlockingIOError:
                    time.sleep(0.001)
            if len(reply) < 6:
                raise RuntimeError(f"virtual bus {bus} did not answer a ping on {link}")
        finally:
            os.close(fd)


def die_with_parent(parent: int | None = None) -> None:
    """Ask the kernel to SIGTERM this process when its parent dies (Linux).

    A virtual rig started by a command that gets killed (kill -9, a crash) must not linger.
    `parent`: the pid that started this process. A parent that died before the request took effect
    left this process re-parented already, which only a pid known from before can reveal (asking
    for our parent here would name the new one).
    """
    parent = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        logger.debug("cannot tie the virtual rig's lifetime to its parent on this system")
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def bus_socket(runtime_dir: Path, bus: str) -> Path:
    """The private control socket of the process that serves `bus`."""
    return runtime_dir / f".{bus}.sock"


def serve_bus(config: VirtualRigConfig, runtime_dir: Path, bus: str, ready: Connection, parent: int) -> None:
    """One bus in its own process, so the four buses answer in parallel as real ones do."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    die_with_parent(parent)
    # Out of the cycle collector's view: the objects inherited from the parent. Left in it, the first
    # full collection walked them all and copied every page it touched (12-35 ms in a fork of
    # so101-sim, 0.3 ms frozen), time in which this bus answers nothing.
    gc.freeze()
    scheduling = prioritise_bus_process(config.realtime_priority)
    logger.debug("virtual bus %s: %s", bus, scheduling)
    model = VirtualRigModel(config, served=[bus])
    server = PtyServer(model, runtime_dir, [bus], bus_socket(runtime_dir, bus))
    server.start()
    gc.freeze()  # the model lives as long as the process: later collections see only new objects
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    if config.scenario:
        model.install_scenario(config.scenario)
    ready.send(os.getpid())
    ready.close()
    try:
        server.run()
    finally:
        server.close()


def serve(config: VirtualRigConfig, *, announce=print) -> None:
    """Run the virtual rig until SIGTERM or SIGINT; `announce` gets the READY JSON line.

    One child process per bus (the buses run in parallel, like four USB adapters), this process
    in front: it owns the public control socket and forwards each request to the buses it concerns.
    """
    runtime_dir = config.runtime_dir or default_runtime_dir()
    runtime_dir.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("fork")
    children: dict[str, multiprocessing.process.BaseProcess] = {}
    front: FrontServer | None = None
    stop = StopFlag()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: (stop.set(), front.stop() if front else None))
    try:
        for bus in ARM_NAMES:
            receive, send = context.Pipe(duplex=False)
            child = context.Process(
                target=serve_bus, args=(config, runtime_dir, bus, send, os.getpid()), name=f"bus-{bus}"
            )
            child.start()
            send.close()
            if not receive.poll(_SELF_TEST_TIMEOUT_S) or stop.is_set():
                raise RuntimeError(f"the process for virtual bus {bus} did not start")
            receive.recv()
            children[bus] = child
        links = link_names(config)
        ports = {bus: str(runtime_dir / links[bus]) for bus in ARM_NAMES}
        front = FrontServer(runtime_dir / CONTROL_SOCKET, ports, {b: bus_socket(runtime_dir, b) for b in ARM_NAMES})
        front.start()
        self_test(ports)
        if config.factory_new:  # out of the box: every adapter unplugged until the person plugs it in
            for bus in ARM_NAMES:
                front.handle({"op": "hangup", "bus": bus})
        front.forward_all({"op": "trace_clear"})
        announce(json.dumps({"ready": True, "ports": ports, "control": str(front.control_path), "pid": os.getpid()}))
        if not stop.is_set():
            front.run()
    except Exception as e:
        announce(json.dumps({"ready": False, "error": str(e)}))
        raise
    finally:
        if front is not None:
            front.close()
        for child in children.values():
            if child.is_alive():
                child.terminate()
        for child in children.values():
            child.join(timeout=5)
            if child.is_alive():
                child.kill()


def main(argv: list[str] | None = None) -> int:
    """`python -m robot.virtual.server '<VirtualRigConfig as JSON>'` (used by the launcher)."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    launcher = os.environ.get(LAUNCHER_PID_ENV)
    die_with_parent(int(launcher) if launcher else None)  # started by a launcher: go when it goes
    config = config_from_json(args[0] if args else "{}")

    def announce(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    serve(config, announce=announce)
    return 0


if __name__ == "__main__":
    sys.exit(main())
