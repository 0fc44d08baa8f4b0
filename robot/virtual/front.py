"""The virtual rig's public control socket, in front of the four bus processes.

    client --JSON line--> FrontServer --(bus named?)--> that bus's process
                                      --(otherwise)---> every bus's process, replies merged

A request that names a `bus` goes to that bus's process; the others go to all four and their
replies are merged (states and stats by bus, traces in time order, fault lists concatenated).
`play` is stamped with one start time, so the hands on all four buses move on the same clock.
"""

import json
import logging
import selectors
import time
from pathlib import Path
from typing import Any

from robot.stop_flag import StopFlag
from robot.virtual.client import VirtualRigClient, VirtualRigControlError
from robot.virtual.json_socket import JsonLineSocket

logger = logging.getLogger(__name__)
_ANY_BUS_OPS = frozenset({"operator"})  # identical in every process: ask one


class FrontServer:
    """Forwards control requests to the bus processes and merges their replies."""

    def __init__(self, control_path: Path, ports: dict[str, str], bus_sockets: dict[str, Path]) -> None:
        self.control_path = control_path
        self.ports = ports
        self._bus_sockets = bus_sockets
        self._clients: dict[str, VirtualRigClient] = {}
        self._selector = selectors.DefaultSelector()
        self._control = JsonLineSocket(control_path, self.handle)
        self._stop = StopFlag()  # set from a signal handler: no lock (see robot/stop_flag.py)

    def start(self) -> None:
        """Connect to every bus process and open the public socket."""
        for bus, path in self._bus_sockets.items():
            self._clients[bus] = VirtualRigClient(path, timeout_s=30.0)
        self._control.open(self._selector)

    def stop(self) -> None:
        """Finish the loop (signal-safe)."""
        self._stop.set()

    def close(self) -> None:
        """Close every connection and remove the socket."""
        for client in self._clients.values():
            client.close()
        self._control.close()
        self._selector.close()

    def run(self) -> None:
        """Serve until `stop()`."""
        while not self._stop.is_set():
            for key, _ in self._selector.select(0.2):
                self._control.on_ready(key)

    # --- routing ---------------------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request: answered here, by one bus process, or by all of them."""
        op = request.get("op")
        try:
            if op == "ping":
                return {"ok": True, "t": time.monotonic()}
            if op == "ports":
                return {"ok": True, "ports": dict(self.ports)}
            bus = request.get("bus")
            if isinstance(bus, str) and bus in self._clients:
                reply = self._forward(bus, request)
                return {**reply, "ports": dict(self.ports)} if op == "reopen" else reply
            if op in _ANY_BUS_OPS:
                return self._forward(next(iter(self._clients)), request)
            if op in ("play", "perform"):
                request = {**request, "start_s": time.monotonic()}
            if op == "trace_dump":
                return self._trace_dump(request)
            return self._merge(op, self.forward_all(request))
        except VirtualRigControlError as e:
            return {"ok": False, "error": str(e)}

    def _forward(self, bus: str, request: dict[str, Any]) -> dict[str, Any]:
        op = str(request.get("op"))
        fields = {k: v for k, v in request.items() if k != "op"}
        return self._clients[bus].request(op, **fields)

    def forward_all(self, request: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Send `request` to every bus process; replies by bus."""
        return {bus: self._forward(bus, request) for bus in self._clients}

    def _merge(self, op: object, replies: dict[str, dict[str, Any]]) -> dict[str, Any]:
        first = next(iter(replies.values()))
        match op:
            case "state" | "stats":
                key = str(op)
                return {"ok": True, key: {bus: reply[key][bus] for bus, reply in replies.items()}}
            case "trace":
                records = [r for bus, reply in replies.items() for r in reply["records"] if r["bus"] == bus]
                records.sort(key=lambda r: r["t"])
                return {"ok": True, "records": records}
            case "add_fault":
                return {"ok": True, "index": first["index"]}
            case "faults":
                # The same rules in every process, each counting only its own bus's traffic.
                merged = [dict(rule) for rule in first["faults"]]
                for reply in list(replies.values())[1:]:
                    for total, rule in zip(merged, reply["faults"], strict=True):
                        total["seen"] += rule["seen"]
                        total["fired"] += rule["fired"]
                return {"ok": True, "faults": merged}
        return first

    def _trace_dump(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = self._merge("trace", self.forward_all({"op": "trace", "bus": None}))
        records = reply["records"]
        path = Path(str(request["path"]))
        with path.open("w") as f:
            for record in records:
                f.write(json.dumps(record) + "\n")
        return {"ok": True, "records": len(records), "path": str(path)}
