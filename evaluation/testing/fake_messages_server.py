"""A loopback HTTP server speaking the parts of the Anthropic Messages API the judge uses.

    POST /v1/messages                       check the request, then answer from the script
    POST /v1/messages/count_tokens          token count by the documented accounting
    POST /v1/messages/batches               create a Message Batch (every request is checked)
    GET  /v1/messages/batches               list batches, newest first (paged)
    GET  /v1/messages/batches/{id}          in_progress for `batch_polls_before_end` polls, then ended
    GET  /v1/messages/batches/{id}/results  JSONL results (scripted errors become `errored`, scripted
                                            ItemOutcome `expired` / `canceled`)

Answers come from a script (per episode, or global, first in first out), else a schema-valid verdict
from `score_fn`; batch creates and lists take their own script (`script_batch_create`,
`script_batch_list`; see fake_batches). The real `anthropic` SDK talks to it through `base_url`. Example:

    with FakeMessagesServer(score_fn=lambda ep, cid: 1.0) as server:
        server.script(HttpError(529, "overloaded_error"), episode=3)
        server.script_batch_create(CreateFault(delay_s=5.0))  # the batch is made, the reply comes too late
        client = anthropic.Anthropic(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from evaluation.testing.fake_api_script import (
    Accounting,
    Action,
    Delay,
    HttpError,
    Reply,
    ScoreFn,
    answer_text,
    check_request,
    episode_of,
    error_answer,
)
from evaluation.testing.fake_batches import BatchBook, CreateFault, FakeBatch, ItemOutcome, batch_json, batch_results

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the Message Batches API accepts


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
    _book: BatchBook = field(default_factory=BatchBook)
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

    def script(self, *actions: Action | ItemOutcome, episode: int | None = None) -> None:
        """Queue answers for the next requests (of one episode, or of any episode).

        An ItemOutcome only makes sense for a batch item; a synchronous request that draws one gets a 500.
        """
        with self._lock:
            queue = self._global if episode is None else self._per_episode.setdefault(episode, deque())
            queue.extend(actions)

    def message_requests(self, episode: int | None = None) -> list[RecordedRequest]:
        """Recorded POST /v1/messages requests (optionally of one episode)."""
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/messages" and (episode is None or r.episode == episode)]

    def script_batch_create(self, *faults: CreateFault) -> None:
        """Queue how the next batch creates are answered (lost reply, error; made or not)."""
        self._book.script_create(*faults)

    def script_batch_list(self, *errors: HttpError) -> None:
        """Queue errors for the next batch list requests."""
        self._book.script_list(*errors)

    def batches(self) -> list[FakeBatch]:
        """Every batch made so far, oldest first (what the organisation would be billed for)."""
        return self._book.all()

    def batch_creates(self) -> list[RecordedRequest]:
        """Recorded POST /v1/messages/batches requests (answered or not)."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages/batches"]

    def problems(self) -> list[str]:
        """Every check failure seen so far."""
        with self._lock:
            return [p for r in self.requests for p in r.problems]

    # -- internals (called from handler threads) -------------------------------------------------

    def _next_action(self, episode: int | None) -> Action | ItemOutcome:
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

    def _message(
        self, body: dict[str, Any], action: Action | ItemOutcome
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, extra headers) answering one Messages request with an action."""
        if isinstance(action, ItemOutcome):
            action = HttpError(500, "api_error", f"fake server: ItemOutcome({action.type!r}) drawn outside a batch")
        if isinstance(action, HttpError):
            return error_answer(action)
        text, stop_reason, stop_details = answer_text(body, action, self.score_fn, self.uncertain_fn)
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

    def _results_url(self, batch_id: str) -> str:
        return f"{self.base_url}/v1/messages/batches/{batch_id}/results"

    def _batch_json(self, batch: FakeBatch) -> dict[str, Any]:
        return batch_json(batch, self._results_url(batch.id))

    def _finish_batch(self, batch: FakeBatch) -> None:
        def answer(params: dict[str, Any], action: object) -> tuple[int, dict[str, Any]]:
            status, payload, _ = self._message(params, action)  # type: ignore[arg-type]
            return status, payload

        def draw(params: dict[str, Any]) -> Action | ItemOutcome:
            return self._next_action(episode_of(params))

        batch.results = batch_results(batch, draw, answer, lambda: self._next_id("req"))


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
            url = urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            server._record(RecordedRequest("GET", self.path, {}, [], None))
            if parts == ["v1", "messages", "batches"]:
                self._list_batches(dict(parse_qsl(url.query)))
                return
            batch = (
                server._book.get(parts[3]) if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"] else None
            )
            if batch is None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            elif len(parts) == 4:
                if server._book.poll(batch, server.batch_polls_before_end):
                    server._finish_batch(batch)
                self._send(200, server._batch_json(batch))
            elif batch.results is None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "batch not ended"}})
            else:
                lines = "".join(json.dumps(r) + "\n" for r in batch.results).encode()
                self._raw(200, lines, "application/binary")

        def _list_batches(self, params: dict[str, str]) -> None:
            error = server._book.next_list_fault()
            if error is not None:
                status, payload, extra = server._message({}, error)
                self._send(status, payload, extra)
                return
            self._send(200, server._book.page(params, server._results_url))

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
            items = body.get("requests", [])
            problems = [
                p for item in items for p in check_request(item.get("params", {}), headers, server.expected_model)
            ]
            ids = [item.get("custom_id") for item in items]
            if len(set(ids)) != len(ids):
                problems.append("duplicate custom_id in batch")
            problems += [f"custom_id {i!r} is not 1-64 of [a-zA-Z0-9_-]" for i in ids if not CUSTOM_ID.match(str(i))]
            server._record(RecordedRequest("POST", "/v1/messages/batches", body, problems, None))
            if problems and server.reject_invalid:
                self._send(
                    400, {"type": "error", "error": {"type": "invalid_request_error", "message": "; ".join(problems)}}
                )
                return
            fault = server._book.next_create_fault()
            batch = server._book.add(server._next_id("msgbatch"), items) if fault.created else None
            if fault.delay_s:
                time.sleep(fault.delay_s)
            if fault.error is not None or batch is None:
                status, payload, extra = server._message({}, fault.error or HttpError(500, "api_error"))
                self._send(status, payload, extra)
                return
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
