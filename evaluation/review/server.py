"""Serve the review app with uvicorn on a socket bound here, in a background thread.

Binding first means a busy port or a bad address fails at once with a clear error, and port 0 yields
the real port before serving starts. The command waits on the thread; tests start and stop it.

    with ReviewServer(app, "127.0.0.1", 0) as server:
        print(server.url)
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import uvicorn
from fastapi import FastAPI

from evaluation.errors import ConfigError, EvaluationError

log = logging.getLogger(__name__)


class ReviewServerError(EvaluationError):
    """The web server could not start or stopped on an error."""


class ReviewServer:
    """A uvicorn server in a daemon thread; a context manager that stops it on exit."""

    def __init__(self, app: FastAPI, host: str, port: int) -> None:
        """Bind the listening socket (nothing is served until `start`).

        Raises:
            ConfigError: The address cannot be bound (port in use, not an address of this machine).
        """
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host.strip("[]"), port))
        except OSError as e:
            self._socket.close()
            raise ConfigError(
                f"cannot listen on {host}:{port}: {e.strerror or e}; pick another --server.port (0 picks a free one) "
                f"or an address of this machine for --server.host"
            ) from e
        self._socket.listen(128)
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=5)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="so101-review-server", daemon=True)
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Base URL of the app (no trailing slash)."""
        host = f"[{self.host.strip('[]')}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _serve(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as e:  # SystemExit from uvicorn's startup included: report it to the caller
            self._error = e

    def start(self, timeout_s: float = 30.0) -> None:
        """Serve in the background; returns once requests are accepted.

        Raises:
            ReviewServerError: The server did not come up within `timeout_s`.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ReviewServerError(f"the review server did not start on {self.url}: {self._error or 'timeout'}")
            time.sleep(0.02)
        log.info("serving %s", self.url)

    def wait(self) -> None:
        """Block until the server stops (Ctrl+C raises KeyboardInterrupt here, in the main thread)."""
        while self._thread.is_alive():
            self._thread.join(0.5)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the server to finish open requests and stop; wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        self._socket.close()

    def __enter__(self) -> ReviewServer:
        """Start serving."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop serving."""
        self.stop()
