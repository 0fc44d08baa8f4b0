"""A loopback HTTP server speaking the parts of the Anthropic Messages API the judge uses.

    POST /v1/messages                       check the request, then answer from the script
    POST /v1/messages/count_tokens          token count by the documented accounting
    POST /v1/messages/batches               create a Message Batch (every request is checked)
    GET  /v1/messages/batches/{id}          in_progress for `batch_polls_before_end` polls, then ended
    GET  /v1/messages/batches/{id}/results  JSONL results (scripted errors become `errored`)

Answers come from a script (per episode, or global, first in first out), else a schema-valid verdict
from `score_fn`. The real `anthropic` SDK talks to it through `base_url`. Example:

    with FakeMessagesServer(score_fn=lambda ep, cid: 1.0) as server:
        server.script(HttpError(529, "overloaded_error"), episode=3)
        client = anthropic.Anthropic(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evaluation.testing.fake_api_script import (
    Accounting,
    Action,
    Delay,
    HttpError,
    Malformed,
    Refusal,
    Reply,
    SchemaBreak,
    ScoreFn,
    check_request,
    episode_of,
    reply_text,
    schema_breaking_text,
)
from evaluation.testing.fake_batches import FakeBatch, batch_json, batch_results


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str  # "GET" or "POST"
    path: str  # URL path
    body: dict[str, Any]  # parsed JSON body ({} for GET)
    problems: list[str]  # what check_request found wrong (empty when fine)
    episode: int | None  # episode index stated in the prompt, if any
    action: str = ""  # name of the scripted action answered with


@dataclass
class FakeMessagesServer:
    """Loopback Messages API. Use as a context manager; thread-safe."""

    score_fn: ScoreFn = lambda episode, criterion: 1.0
    uncertain_fn: Any = lambda episode, criterion: False
    latency_s: float = 0.0  # fixed delay before every /v1/messages answer, seconds
    expected_model: str | None = None  # reject requests for another model when set
    reject_invalid: bool = True  # answer 400 to a request that fails the checks
    batch_polls_before_end: int = 1  # batch status polls that still report in_progress
    accounting: Accounting = field(default_factory=Accounting)
    requests: list[RecordedRequest] = field(default_factory=list)
    _global: deque = field(default_factory=deque)
    _per_episode: dict[int, deque] = field(default_factory=dict)
    _batches: dict[str, FakeBatch] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _counter: int = 0

    def __enter__(self) -> FakeMessagesServer:
        """Start serving on 127.0.0.1 (a free port)."""
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        serve = partial(self._httpd.serve_forever, poll_interval=0.05)  # quick shutdown
        threading.Thread(target=serve, name="fake-messages-api", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop serving."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def base_url(self) -> str:
        """URL to pass as the SDK's base_url."""
        assert self._httpd is not None, "start the server with `with FakeMessagesServer() as server:`"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *actions: Action, episode: int | None = None) -> None:
        """Queue answers for the next requests (of one episode, or of any episode)."""
        with self._lock:
            queue = self._global if episode is None else self._per_episode.setdefault(episode, deque())
            queue.extend(actions)

    def message_requests(self, episode: int | None = None) -> list[RecordedRequest]:
        """Recorded POST /v1/messages requests (optionally of one episode)."""
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/messages" and (episode is None or r.episode == episode)]

    def problems(self) -> list[str]:
        """Every check failure seen so far."""
        with self._lock:
            return [p for r in self.requests for p in r.problems]

    # -- internals (called from handler threads) -------------------------------------------------

    def _next_action(self, episode: int | None) -> Action:
        with self._lock:
            queue = self._per_episode.get(episode) if episode is not None else None
            if queue:
                return queue.popleft()
            if self._global:
                return self._global.popleft()
            return Reply()

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._counter += 1
            return f"{prefix}_fake_{self._counter:06d}"

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(record)

    def _message(self, body: dict[str, Any], action: Action) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, extra headers) answering one Messages request with an action."""
        if isinstance(action, HttpError):
            error: dict[str, Any] = {"type": action.error_type, "message": action.message}
            if action.error_code:
                error["details"] = {"error_code": action.error_code}
            headers = {} if action.retry_after_s is None else {"retry-after-ms": str(int(action.retry_after_s * 1000))}
            return action.status, {"type": "error", "error": error}, headers
        stop_details = None
        stop_reason = "end_turn"
        if isinstance(action, Refusal):
            text, stop_reason = "", "refusal"
            stop_details = {"type": "refusal", "category": action.category, "explanation": action.explanation}
        elif isinstance(action, Malformed):
            text = action.text
        elif isinstance(action, SchemaBreak):
            text = schema_breaking_text(body)
        else:
            reply = action.then if isinstance(action, Delay) else action
            text = reply_text(body, reply, self.score_fn, self.uncertain_fn)
            stop_reason = reply.stop_reason
        with self._lock:
            usage = self.accounting.usage(body, text)
        message = {
            "id": self._next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": stop_details,
            "usage": usage,
        }
        return 200, message, {}

    def _batch_json(self, batch: FakeBatch) -> dict[str, Any]:
        return batch_json(batch, f"{self.base_url}/v1/messages/batches/{batch.id}/results")

    def _finish_batch(self, batch: FakeBatch) -> None:
        def answer(params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            status, payload, _ = self._message(params, self._next_action(episode_of(params)))
            return status, payload

        batch.results = batch_results(batch, answer, lambda: self._next_id("req"))


def _make_handler(server: FakeMessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: tests read `server.requests` instead

        def do_POST(self) -> None:
            try:
                self._post()
            except Exception as e:  # a bug in the fake must show up as a failed check, not a hang
                server._record(RecordedRequest("POST", self.path, {}, [f"fake server error: {e!r}"], None))
                self._send(500, {"type": "error", "error": {"type": "api_error", "message": f"fake server: {e!r}"}})

        def _post(self) -> None:
            length = int(self.headers.get("content-length", 0))
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(
                    400, {"type": "error", "error": {"type": "invalid_request_error", "message": "body is not JSON"}}
                )
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = self.path.split("?")[0]
            if path == "/v1/messages":
                self._messages(body, headers)
            elif path == "/v1/messages/count_tokens":
                problems = check_request(body, headers, server.expected_model, count_only=True)
                server._record(RecordedRequest("POST", path, body, problems, episode_of(body)))
                usage = server.accounting.usage(body, "", use_cache=False)
                self._send(200, {"input_tokens": usage["input_tokens"]})
            elif path == "/v1/messages/batches":
                self._create_batch(body, headers)
            else:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

        def do_GET(self) -> None:
            parts = self.path.split("?")[0].strip("/").split("/")
            server._record(RecordedRequest("GET", self.path, {}, [], None))
            batch = (
                server._batches.get(parts[3])
                if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"]
                else None
            )
            if batch is None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            elif len(parts) == 4:
                with server._lock:
                    batch.polls += 1
                    finish = batch.results is None and batch.polls > server.batch_polls_before_end
                if finish:
                    server._finish_batch(batch)
                self._send(200, server._batch_json(batch))
            elif batch.results is None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "batch not ended"}})
            else:
                lines = "".join(json.dumps(r) + "\n" for r in batch.results).encode()
                self._raw(200, lines, "application/binary")

        def _messages(self, body: dict[str, Any], headers: dict[str, str]) -> None:
            problems = check_request(body, headers, server.expected_model)
            record = RecordedRequest("POST", "/v1/messages", body, problems, episode_of(body))
            server._record(record)
            if problems and server.reject_invalid:
                self._send(
                    400, {"type": "error", "error": {"type": "invalid_request_error", "message": "; ".join(problems)}}
                )
                return
            action = server._next_action(record.episode)
            record.action = type(action).__name__
            if server.latency_s:
                time.sleep(server.latency_s)
            if isinstance(action, Delay):
                time.sleep(action.seconds)
            status, payload, extra = server._message(body, action)
            self._send(status, payload, extra)

        def _create_batch(self, body: dict[str, Any], headers: dict[str, str]) -> None:
            problems = [
                p
                for item in body.get("requests", [])
                for p in check_request(item.get("params", {}), headers, server.expected_model)
            ]
            ids = [item.get("custom_id") for item in body.get("requests", [])]
            if len(set(ids)) != len(ids):
                problems.append("duplicate custom_id in batch")
            server._record(RecordedRequest("POST", "/v1/messages/batches", body, problems, None))
            if problems and server.reject_invalid:
                self._send(
                    400, {"type": "error", "error": {"type": "invalid_request_error", "message": "; ".join(problems)}}
                )
                return
            batch = FakeBatch(server._next_id("msgbatch"), list(body["requests"]), datetime.now(UTC))
            with server._lock:
                server._batches[batch.id] = batch
            self._send(200, server._batch_json(batch))

        def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
            self._raw(status, json.dumps(payload).encode(), "application/json", extra)

        def _raw(self, status: int, data: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", server._next_id("req"))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

    return Handler
