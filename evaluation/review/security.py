"""What keeps the review app safe on a shared machine: access token, CSRF tokens, media paths, host names.

- Access token (when configured): `?token=<t>` once sets an HttpOnly cookie holding a keyed hash of
  it; later requests carry the cookie, or `Authorization: Bearer <t>`, or `X-Review-Token: <t>`.
- CSRF: every rendered page embeds a fresh token `nonce.mac`, with mac = HMAC(server secret,
  session cookie | scope | nonce); a post is accepted only with a token minted for its session and
  its scope (one episode), so another site cannot forge one.
- Media: a requested path must name an existing `.mp4` under `<dataset>/videos/` after resolving
  symlinks and `..`; anything else is refused.
- Host header (loopback without a token): only localhost names are served, so a DNS-rebinding page
  cannot read or post through the user's browser.
- Identity: every override is recorded under the reviewer the server was started with (the token
  is shared, so it cannot tell people apart); a posted `reviewer` field is ignored.
- Body size: an override post over 64 KiB is refused (413) from its Content-Length, or as soon as a
  chunked body passes it, without reading the rest (body_limit).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from evaluation.errors import EvaluationError

SESSION_COOKIE = "so101_review_session"
AUTH_COOKIE = "so101_review_auth"
TOKEN_HEADER = "x-review-token"
MEDIA_SUFFIXES = (".mp4",)
LOCAL_HOST_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


class MediaPathError(EvaluationError):
    """A media path is not allowed (`status` is the HTTP status to answer with)."""

    def __init__(self, status: int, detail: str) -> None:
        """Build the error with its HTTP status (403 or 404)."""
        super().__init__(detail)
        self.status = status


class Secrets:
    """Per-process secret keys: CSRF tokens and cookies die with the server (restart: reload the page)."""

    def __init__(self, access_token: str = "") -> None:
        """Create fresh keys; `access_token` "" means the app needs no login."""
        self._key = secrets.token_bytes(32)
        self.access_token = access_token

    def _mac(self, *parts: str) -> str:
        return hmac.new(self._key, "|".join(parts).encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def new_session() -> str:
        """A fresh session id for the CSRF cookie."""
        return secrets.token_urlsafe(24)

    def csrf_token(self, session: str, scope: str) -> str:
        """A new token for one page render (a fresh nonce each time)."""
        nonce = secrets.token_urlsafe(12)
        return f"{nonce}.{self._mac('csrf', session, scope, nonce)}"

    def check_csrf(self, token: str, session: str, scope: str) -> bool:
        """Whether a posted token was minted for this session and scope."""
        nonce, _, mac = (token or "").partition(".")
        if not nonce or not mac or not session:
            return False
        return hmac.compare_digest(mac, self._mac("csrf", session, scope, nonce))

    def auth_cookie(self) -> str:
        """The cookie value that proves a successful token login."""
        return self._mac("auth", self.access_token)

    def token_matches(self, candidate: str) -> bool:
        """Constant-time comparison of a presented token with the access token."""
        return bool(self.access_token) and hmac.compare_digest(candidate.encode(), self.access_token.encode())

    def cookie_matches(self, candidate: str) -> bool:
        """Whether an auth cookie value is valid."""
        return bool(self.access_token) and hmac.compare_digest(candidate, self.auth_cookie())


def host_allowed(host_header: str) -> bool:
    """Whether a Host header names this machine by a loopback name (any port)."""
    host = host_header.strip().lower()
    if host.startswith("["):
        name = host.split("]", 1)[0] + "]"
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name in LOCAL_HOST_NAMES


def resolve_media(dataset_root: Path, requested: str) -> Path:
    """The file a media request names, strictly inside `<dataset_root>/videos/`.

    Raises:
        MediaPathError: 403 for a path that tries to leave the folder (`..`, absolute, encoded, a
            symlink out) or names a file type that is not served; 404 when there is no such file.
    """
    if "\x00" in requested or "\\" in requested or unquote(requested) != requested:
        raise MediaPathError(403, "encoded or malformed media path")
    pure = PurePosixPath(requested)
    if pure.is_absolute() or not pure.parts or any(p in ("..", ".", "") for p in pure.parts):
        raise MediaPathError(403, "media paths are relative to the dataset, without '..'")
    if pure.parts[0] != "videos" or pure.suffix.lower() not in MEDIA_SUFFIXES:
        raise MediaPathError(403, "only the dataset's videos are served")
    base = (dataset_root.resolve() / "videos").resolve()
    try:
        target = (dataset_root.resolve() / Path(*pure.parts)).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise MediaPathError(404, "no such video") from None
    except (OSError, RuntimeError):  # symlink loops, permission errors
        raise MediaPathError(403, "media path cannot be resolved") from None
    if not target.is_relative_to(base):
        raise MediaPathError(403, "media path leaves the dataset's videos folder")
    if not target.is_file():
        raise MediaPathError(404, "no such video")
    return target
