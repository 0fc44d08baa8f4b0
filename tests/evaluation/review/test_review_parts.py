"""Small parts of the review app: bind checks, host names, CSRF tokens, frame refs, forms, the audit sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.errors import ConfigError
from evaluation.review.catalog import EpisodeFilter, audit_sample
from evaluation.review.config import AuditConfig, ServerConfig, check_bind, is_loopback, token_warnings
from evaluation.review.episode_view import FrameRef, parse_ref
from evaluation.review.forms import FormError, override_form, parse_form, parse_time
from evaluation.review.security import Secrets, host_allowed


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("my-laptop.local", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool):
    assert is_loopback(host) is loopback


def test_bind_checks_and_the_token_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    check_bind("127.0.0.1", "")
    check_bind("0.0.0.0", "x" * 16)
    with pytest.raises(ConfigError, match=r"refusing to serve on 0\.0\.0\.0"):
        check_bind("0.0.0.0", "")
    with pytest.raises(ConfigError, match="at least 16"):
        check_bind("127.0.0.1", "short")
    monkeypatch.setenv("SO101_REVIEW_TOKEN", "from-the-environment")
    assert ServerConfig().token() == "from-the-environment"
    assert ServerConfig(access_token="given-on-the-command-line").token() == "given-on-the-command-line"
    with pytest.raises(ConfigError, match="not a host name"):
        ServerConfig(host="{':': None}")


def test_the_token_from_a_file_and_the_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SO101_REVIEW_TOKEN", "from-the-environment")
    path = tmp_path / "token"
    path.write_text("from-a-file-0123456789\n")
    path.chmod(0o600)
    from_file = ServerConfig(access_token_file=path)
    assert from_file.token() == "from-a-file-0123456789"  # the file wins over the environment
    assert token_warnings([f"--server.access_token_file={path}"], from_file) == []
    path.chmod(0o644)
    assert token_warnings([], from_file) == [
        f"the access token file {path} can be read by other users; run: chmod 600 {path}"
    ]
    argv = ["--server.access_token=given-on-the-command-line"]
    [warning] = token_warnings(argv, ServerConfig(access_token="given-on-the-command-line"))
    assert "visible to every user of this machine (ps" in warning
    assert "SO101_REVIEW_TOKEN" in warning
    assert "--server.access_token_file" in warning
    assert token_warnings(["--config_path=review.yaml"], ServerConfig(access_token="from-a-yaml-file")) == []
    with pytest.raises(ConfigError, match="both set"):
        ServerConfig(access_token="x" * 16, access_token_file=path)
    with pytest.raises(ConfigError, match="cannot read the access token file"):
        ServerConfig(access_token_file=tmp_path / "missing").token()
    (tmp_path / "two").write_text("a\nb\n")
    with pytest.raises(ConfigError, match="2 non-empty lines"):
        ServerConfig(access_token_file=tmp_path / "two").token()


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:8765", True),
        ("localhost:80", True),
        ("localhost", True),
        ("[::1]:8765", True),
        ("evil.example:8765", False),
        ("127.0.0.1.evil.example", False),
        ("", False),
        ("localhost.:1", False),
    ],
)
def test_host_headers(header: str, allowed: bool):
    assert host_allowed(header) is allowed


def test_csrf_tokens_are_bound_to_session_and_page():
    keys = Secrets()
    token = keys.csrf_token("session-a", "episode:1")
    assert keys.check_csrf(token, "session-a", "episode:1")
    assert token != keys.csrf_token("session-a", "episode:1")  # a fresh nonce per page render
    assert not keys.check_csrf(token, "session-b", "episode:1")
    assert not keys.check_csrf(token, "session-a", "episode:2")
    assert not keys.check_csrf(token, "", "episode:1")
    assert not keys.check_csrf("", "session-a", "episode:1")
    assert not Secrets().check_csrf(token, "session-a", "episode:1")  # another server process


def _fields(ref: FrameRef) -> tuple[str, float | None, int | None]:
    return ref.view, ref.time_s, ref.frame_index


def test_frame_refs():
    assert _fields(parse_ref("overhead@12.40s", 30)) == ("overhead", pytest.approx(12.4), 372)
    assert _fields(parse_ref("left_wrist@1.00s#31", 30)) == ("left_wrist", pytest.approx(31 / 30), 31)
    assert _fields(parse_ref("<b>overhead</b>", 30)) == ("", None, None)


def test_form_parsing():
    fields = parse_form(b"criterion=R3&score=0.5&reason=confirmed&note=a+b&t=1.5&reviewer=ana")
    form = override_form(fields)
    assert (form.criterion, form.score, form.reason, form.note, form.time_s) == ("R3", 0.5, "confirmed", "a b", 1.5)
    assert not hasattr(form, "reviewer")  # who reviews is the server's, never the form's
    assert form.expected_old is None
    with pytest.raises(FormError, match="at most"):
        parse_form(b"x" * 70_000)
    with pytest.raises(FormError, match="UTF-8"):
        parse_form(b"note=\xff")
    with pytest.raises(FormError, match="choose a score"):
        override_form({"reason": "confirmed"})
    with pytest.raises(FormError, match="not a number"):
        override_form({"reason": "confirmed", "score": "one"})
    assert override_form({"reason": "confirmed", "score": "1", "reviewer": "a\nb"}).score == 1.0  # ignored
    assert [parse_time(x) for x in ("", "nan", "-1", "inf", "abc", "2.5")] == [0.0, 0.0, 0.0, 0.0, 0.0, 2.5]


def test_the_audit_sample_is_reproducible():
    episodes = list(range(40))
    sample = audit_sample("fold_act", episodes, AuditConfig(fraction=0.1, seed=3))
    assert len(sample) == 4
    assert sample == audit_sample("fold_act", list(reversed(episodes)), AuditConfig(fraction=0.1, seed=3))
    assert sample != audit_sample("fold_act", episodes, AuditConfig(fraction=0.1, seed=4))
    assert len(audit_sample("fold_act", [5], AuditConfig(fraction=0.1))) == 1
    assert audit_sample("fold_act", [], AuditConfig()) == frozenset()


def test_filters_round_trip_and_reject_unknown_values():
    flt = EpisodeFilter.from_query({"routed": "1", "tag": "act v2", "criterion": "R3"}, ["R1", "R3"])
    assert flt == EpisodeFilter(routed=True, tag="act v2", criterion="R3")
    assert flt.query_string() == "routed=1&tag=act+v2&criterion=R3"
    with pytest.raises(ConfigError, match="criterion='R9'"):
        EpisodeFilter.from_query({"criterion": "R9"}, ["R1"])
