"""Who may use a local web app of ours (so101-review, so101-studio), and where it is mounted.

The access token is asked for once:

`?token=<t>` once sets an HttpOnly cookie holding a keyed hash of it; later requests carry the
cookie, or `Authorization: Bearer <t>`, or `X-Review-Token: <t>` (security.py keeps the keys).
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from evaluation.review.security import AUTH_COOKIE, TOKEN_HEADER, Secrets


def with_page_headers(response: Response, csp: str) -> Response:
    """A page's answer with the headers every page of ours carries: its CSP, no sniffing, no framing."""
    for name, value in (
        ("Content-Security-Policy", csp),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ):
        response.headers[name] = value
    return response


def text_response(status: int, message: str) -> Response:
    """A one-line plain-text answer."""
    return Response(message + "\n", status_code=status, media_type="text/plain; charset=utf-8")


def mount_base(request: Request) -> str:
    """The path prefix the app is mounted under, URL-quoted ("" at the root), without a trailing slash.

    Starlette's `mount` (and any ASGI server or dispatcher serving an app under a prefix) names the
    prefix in the scope's `root_path`; links and redirects must carry it, or they leave the app. The
    scope holds it decoded, as it holds `path`: quoted, a prefix with a space still makes a valid URL.
    """
    return quote(_root_path(request), safe="/")


def app_path(request: Request) -> str:
    """The request's path inside the app, whether the mount left its prefix in `path` or stripped it.

    Starlette's `mount` keeps the full path in `scope["path"]`; a proxy-style dispatcher removes the
    prefix. Either way the prefix is `root_path`, so this is the path the app's routes see.
    """
    path, base = request.url.path, _root_path(request)
    if base and (path == base or path.startswith(base + "/")):
        return path[len(base) :] or "/"
    return path


def _root_path(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def authenticate(request: Request, keys: Secrets, command: str) -> Response | None:
    """None when the request carries the access token (query, cookie or header); else the refusal.

    `command`: the command whose printed URL holds the token (named in the refusal).
    """
    token = request.query_params.get("token")
    if token is not None:
        if not keys.token_matches(token):
            return text_response(401, f"wrong access token: use the URL {command} printed")
        rest = {k: v for k, v in request.query_params.items() if k != "token"}
        target = mount_base(request) + app_path(request) + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(AUTH_COOKIE, keys.auth_cookie(), httponly=True, samesite="strict", path="/")
        return response
    if keys.cookie_matches(request.cookies.get(AUTH_COOKIE, "")):
        return None
    header = request.headers.get(TOKEN_HEADER) or request.headers.get("authorization", "").removeprefix("Bearer ")
    if header and keys.token_matches(header):
        return None
    return text_response(401, f"this page needs its access token: open the URL {command} printed (…/?token=…)")
