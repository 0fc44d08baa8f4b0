"""A Unix socket that answers JSON-line requests, driven by the owner's `select()` loop.

    listener --accept--> connection --line--> handle(request) --reply--> same connection

Both the bus processes and the front process speak it; neither owns a thread for it: the owner
registers the sockets with its selector and calls `on_ready` for each event.
"""

import json
import logging
import selectors
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)
CONTROL_KEY = "control"


class JsonLineSocket:
    """Accepts clients on `path` and answers each line with `handle(request)`."""

    def __init__(self, path: Path, handle: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.path = path
        self._handle = handle
        self._selector: selectors.BaseSelector | None = None
        self._listener: socket.socket | None = None
        self._buffers: dict[socket.socket, bytearray] = {}

    def open(self, selector: selectors.BaseSelector) -> None:
        """Bind (replacing a stale socket file) and register with `selector`."""
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        listener.listen(8)
        listener.setblocking(False)
        self._listener = listener
        self._selector = selector
        selector.register(listener, selectors.EVENT_READ, (CONTROL_KEY, "listen"))

    def on_ready(self, key: selectors.SelectorKey) -> None:
        """Handle one selector event that carries this socket's key."""
        if key.data[1] == "listen":
            self._accept()
        else:
            self._read(key.fileobj)  # type: ignore[arg-type]

    def close(self) -> None:
        """Close every connection and remove the socket file."""
        for conn in list(self._buffers):
            conn.close()
        self._buffers.clear()
        if self._listener is not None:
            self._listener.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        if self._listener is None or self._selector is None:
            return
        conn, _ = self._listener.accept()
        conn.setblocking(True)  # replies are sent whole; the client is waiting for them
        self._buffers[conn] = bytearray()
        self._selector.register(conn, selectors.EVENT_READ, (CONTROL_KEY, "client"))

    def _read(self, conn: socket.socket) -> None:
        chunk = conn.recv(65536)
        if not chunk:
            if self._selector is not None:
                self._selector.unregister(conn)
            self._buffers.pop(conn, None)
            conn.close()
            return
        buffer = self._buffers[conn]
        buffer.extend(chunk)
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            try:
                request = json.loads(line)
                reply = self._handle(request) if isinstance(request, dict) else None
            except json.JSONDecodeError as e:
                reply = {"ok": False, "error": f"not JSON: {e}"}
            reply = reply or {"ok": False, "error": "a request is a JSON object with an 'op'"}
            try:
                conn.sendall(json.dumps(reply, default=str).encode() + b"\n")
            except OSError:
                logger.debug("control client went away before its reply")
