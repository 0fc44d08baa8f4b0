"""Who an override is recorded under, and how large a post may be: through real HTTP and raw sockets."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from urllib.parse import urlencode

import httpx

from evaluation.overrides import overrides_of
from evaluation.review.forms import MAX_BODY_BYTES
from evaluation.store import EvaluationStore
from tests.support.judged_store import judge_tables
from tests.support.review_pages import override_csrf
from tests.support.review_server import serving

DATASET = "fold_virtual"
SOCKET_TIMEOUT_S = 60.0  # a server that waited for the rest of a body would make recv time out


def test_a_posted_reviewer_is_ignored_and_the_trail_shows_the_servers(dataset_root: Path, judged_store: Path):
    with serving(dataset_root, judged_store, reviewer="ana") as server:
        client = httpx.Client(base_url=server.url)
        form = {
            "csrf": override_csrf(client.get("/episodes/0").text),
            "criterion": "R3",
            "score": "1",
            "note": "push seen",
            "reason": "view_ambiguous",
            "expected_old": "0.5",
            "reviewer": "mallory",
        }
        posted = client.post("/episodes/0/overrides", data=form)
        assert posted.status_code == 303
        assert "reviewer" not in posted.headers.get("set-cookie", "")  # nothing for the browser to send back
        page = client.get("/episodes/0").text
        client.close()
    trail = re.search(r'<table class="trail" id="trail-R3">.*?</table>', page, re.S)
    assert trail
    assert "<td>ana</td>" in trail.group(0)
    assert "mallory" not in page
    assert not re.search(r'<input[^>]*name="reviewer"', page)  # the page offers no reviewer field to fill in
    assert '<strong id="reviewer-name"' in page  # it shows who writes, read-only
    assert ">ana</strong>" in page
    with EvaluationStore(judged_store) as store:
        assert [(o.reviewer, o.new_score) for o in overrides_of(store, DATASET)] == [("ana", 1.0)]


def _post_head(port: int, framing: str) -> bytes:
    return (
        f"POST /episodes/0/overrides HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n"
    ).encode()


def _reply(sock: socket.socket) -> tuple[bytes, bytes]:
    """(status line and headers, body) of one response; reads until the connection closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def test_a_10_mb_post_is_refused_before_its_body_is_sent(review_server, judged_store: Path):
    before = judge_tables(judged_store)
    with socket.create_connection(("127.0.0.1", review_server.port), timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(_post_head(review_server.port, f"Content-Length: {10 * 1024 * 1024}") + b"criterion=R3&no")
        head, body = _reply(sock)  # only 15 of the 10 MB were sent: the answer cannot have waited for them
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b"connection: close" in head.lower()
    assert f"the form is {10 * 1024 * 1024} bytes; at most {MAX_BODY_BYTES} are accepted".encode() in body
    with EvaluationStore(judged_store) as store:
        assert overrides_of(store, DATASET) == []
    assert judge_tables(judged_store) == before


def test_a_chunked_post_is_cut_off_past_the_limit(review_server, judged_store: Path):
    chunk = b"x" * (16 * 1024)
    chunks = MAX_BODY_BYTES // len(chunk) + 1  # one past the limit; the body's closing chunk never comes
    with socket.create_connection(("127.0.0.1", review_server.port), timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(_post_head(review_server.port, "Transfer-Encoding: chunked"))
        for _ in range(chunks):
            sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        head, body = _reply(sock)
    assert head.startswith(b"HTTP/1.1 413"), head
    assert f"the form is over {MAX_BODY_BYTES} bytes".encode() in body
    with EvaluationStore(judged_store) as store:
        assert overrides_of(store, DATASET) == []


def test_a_chunked_post_within_the_limit_is_read(review_server):
    client = httpx.Client(base_url=review_server.url)
    form = {
        "csrf": override_csrf(client.get("/episodes/1").text),
        "criterion": "R1",
        "score": "1",
        "reason": "confirmed",
        "note": "n" * 100,
        "expected_old": "0",
    }
    body = urlencode(form).encode()
    posted = client.post(
        "/episodes/1/overrides",
        content=iter([body[:50], body[50:]]),  # a generator body goes chunked
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    client.close()
    assert posted.request.headers.get("transfer-encoding") == "chunked"
    assert posted.status_code == 303
