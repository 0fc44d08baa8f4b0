"""Request bodies read under a size limit, never buffered past it.

A declared `Content-Length` over the limit is refused before a byte of the body is read; a chunked
body (no length) is counted chunk by chunk as it arrives and refused as soon as the count passes
the limit. The refusal (413) closes the connection, so the rest of the body is never read.
"""

from __future__ import annotations

from starlette.requests import Request

from evaluation.errors import EvaluationError


class BodyRefusedError(EvaluationError):
    """A request body was refused before it was read in full (`status`: the HTTP status to answer with)."""

    def __init__(self, status: int, detail: str) -> None:
        """Build the error with its HTTP status (400 or 413)."""
        super().__init__(detail)
        self.status = status


async def read_body(request: Request, limit_bytes: int) -> bytes:
    """The whole body, if it is at most `limit_bytes` long.

    Raises:
        BodyRefusedError: 413 when the declared or counted size passes the limit (the excess is not
            read), 400 when Content-Length is not a byte count.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise BodyRefusedError(400, f"Content-Length {declared[:40]!r} is not a byte count")
        if int(declared) > limit_bytes:
            raise BodyRefusedError(413, f"the form is {int(declared)} bytes; at most {limit_bytes} are accepted")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit_bytes:
            raise BodyRefusedError(413, f"the form is over {limit_bytes} bytes; at most {limit_bytes} are accepted")
        chunks.append(chunk)
    return b"".join(chunks)
