"""The live view's web server: the page, the latest JPEG of each camera, and the joint traces as JSON.

    GET /                  the page
    GET /frame/<name>.jpg  the latest picture of a camera
    GET /state.json        {"cameras": [...], "joints": [...], "traces": {name: [[t_s, value], ...]}, "renders": n}

Standard-library HTTP on threads of its own: nothing here runs on the control thread. It listens on
127.0.0.1 by default; the page only shows what the cameras see, but a session's pictures are the
user's to share.
"""

import json
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

from robot.joints import JOINT_NAMES
from teleop.live_view.config import LiveViewConfig
from teleop.live_view.feed import LiveFeed, Renderer
from teleop.live_view.page import page

logger = logging.getLogger(__name__)


class LiveView:
    """The feed (a step hook for the loop), its renderer and the server; a context manager."""

    def __init__(self, config: LiveViewConfig) -> None:
        self.config = config
        self.feed = LiveFeed()
        self.renderer = Renderer(self.feed, config.refresh_fps, config.history_s)
        self._server: ThreadingHTTPServer | None = None
        self._thread: Thread | None = None

    @property
    def url(self) -> str:
        """Where the page is (once started)."""
        if self._server is None:
            return ""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> "LiveView":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Listen and render.

        Raises:
            OSError: the port is taken (the caller's message names `--view.port`).
        """
        renderer, html = self.renderer, page(self.config.refresh_fps)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                jpegs, traces, renders = renderer.snapshot()
                if path == "/":
                    self._send(200, "text/html; charset=utf-8", html)
                elif path == "/state.json":
                    state = {
                        "cameras": sorted(jpegs),
                        "joints": list(JOINT_NAMES),
                        "traces": traces,
                        "renders": renders,
                    }
                    self._send(200, "application/json", json.dumps(state).encode())
                elif path.startswith("/frame/") and path.endswith(".jpg") and path[7:-4] in jpegs:
                    self._send(200, "image/jpeg", jpegs[path[7:-4]])
                else:
                    self._send(404, "text/plain", b"not found")

            def _send(self, status: int, kind: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                logger.debug("live view: " + format, *args)

        self._server = ThreadingHTTPServer((self.config.host, self.config.port), Handler)
        self._server.daemon_threads = True
        self._thread = Thread(target=self._server.serve_forever, name="live-view-http", daemon=True)
        self._thread.start()
        renderer.start()

    def stop(self) -> None:
        """Stop serving and rendering."""
        self.renderer.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
