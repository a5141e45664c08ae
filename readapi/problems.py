"""Structured errors: every failure is `application/problem+json` with type, title, status, detail and,
where there is one, the field at fault."""

from __future__ import annotations

import logging
import re

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException

from commands.errors import CommandError, Conflict
from events.store import StreamConflict

log = logging.getLogger("parley.api")

PROBLEM_TYPE = "https://parley.dev/problems/"
TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
          409: "Conflict", 413: "Bad Request", 429: "Too Many Requests", 500: "Internal Server Error"}
_PATH = re.compile(r"at `\$\.?([^`]*)`")
_MISSING = re.compile(r"missing required field `([^`]*)`")


class Problem(msgspec.Struct, omit_defaults=True):
    type: str
    title: str
    status: int
    detail: str
    field: str | None = None


def problem_body(status: int, detail: str, field: str | None = None, title: str | None = None) -> bytes:
    title = title or TITLES.get(status, "Error")
    slug = title.lower().replace(" ", "-")
    return msgspec.json.encode(Problem(PROBLEM_TYPE + slug, title, status, detail, field))


def problem(status: int, detail: str, field: str | None = None, title: str | None = None,
            headers: dict[str, str] | None = None) -> Response:
    return Response(problem_body(status, detail, field, title), status_code=status,
                    media_type="application/problem+json", headers=headers)


def field_of_validation_error(message: str) -> str | None:
    """msgspec names the offending path (`at $.content`) or the missing field; the problem names it too."""
    path = _PATH.search(message)
    missing = _MISSING.search(message)
    parts = [part for part in (path and path.group(1), missing and missing.group(1)) if part]
    return ".".join(parts) or None


def handle_command_error(_: Request, exc: CommandError) -> Response:
    return problem(exc.status, exc.detail, exc.field, exc.title)


def handle_stream_conflict(_: Request, exc: StreamConflict) -> Response:
    return problem(409, "the record changed concurrently; retry with fresh data", title=Conflict.title)


def handle_validation(_: Request, exc: msgspec.ValidationError) -> Response:
    return problem(400, str(exc), field_of_validation_error(str(exc)), "Invalid request")


def handle_http(_: Request, exc: HTTPException) -> Response:
    status = 400 if exc.status_code == 413 else exc.status_code
    detail = "the request body is too large" if exc.status_code == 413 else str(exc.detail)
    return problem(status, detail, headers=exc.headers)


def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(500, "an unexpected error occurred; it has been logged")


EXCEPTION_HANDLERS = {
    CommandError: handle_command_error,
    StreamConflict: handle_stream_conflict,
    msgspec.ValidationError: handle_validation,
    HTTPException: handle_http,
    Exception: handle_unexpected,
}
