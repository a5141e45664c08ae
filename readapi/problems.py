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
from readapi.auth import challenge
from readapi.unavailable import DATABASE_DOWN, DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS, Unavailable

log = logging.getLogger("parley.api")

PROBLEM_TYPE = "https://parley.dev/problems/"
TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
          409: "Conflict", 412: "Precondition Failed", 413: "Content Too Large", 415: "Unsupported Media Type", 429: "Too Many Requests",
          500: "Internal Server Error", 503: "Service Unavailable"}
_PATH = re.compile(r"at `\$\.?([^`]*)`")
_MISSING = re.compile(r"(?:missing required|unknown) field `([^`]*)`")




def unavailable_response(detail: str, headers: dict[str, str] | None = None) -> Response:
    return problem(503, detail, headers={"Retry-After": str(RETRY_AFTER_SECONDS), **(headers or {})})


class Problem(msgspec.Struct, omit_defaults=True):
    type: str
    title: str
    status: int
    detail: str
    field: str | None = None


def problem_body(status: int, detail: str, field: str | None = None, title: str | None = None,
                 extensions: dict[str, str] | None = None) -> bytes:
    title = title or TITLES.get(status, "Error")
    slug = title.lower().replace(" ", "-")
    body = Problem(PROBLEM_TYPE + slug, title, status, detail, field)
    return msgspec.json.encode({**msgspec.to_builtins(body), **extensions} if extensions else body)


def problem(status: int, detail: str, field: str | None = None, title: str | None = None,
            headers: dict[str, str] | None = None, extensions: dict[str, str] | None = None) -> Response:
    return Response(problem_body(status, detail, field, title, extensions), status_code=status,
                    media_type="application/problem+json", headers=headers)


def field_of_validation_error(message: str) -> str | None:
    """msgspec names the offending path (`at $.content`) or the missing or unknown field; the problem names
    it too."""
    path = _PATH.search(message)
    missing = _MISSING.search(message)
    parts = [part for part in (path and path.group(1), missing and missing.group(1)) if part]
    return ".".join(parts) or None


def handle_command_error(request: Request, exc: CommandError) -> Response:
    # a 401 names the schemes the route accepts (RFC 9110 requires the challenge)
    headers = {"WWW-Authenticate": challenge(request.scope.get("route_handler"))} if exc.status == 401 else None
    return problem(exc.status, exc.detail, exc.field, exc.title, headers, exc.extensions)


def handle_stream_conflict(_: Request, exc: StreamConflict) -> Response:
    return problem(409, "the record changed concurrently; retry with fresh data", title=Conflict.title)


def handle_validation(_: Request, exc: msgspec.ValidationError) -> Response:
    return problem(400, str(exc), field_of_validation_error(str(exc)), "Invalid request")


def handle_http(_: Request, exc: HTTPException) -> Response:
    detail = "the request body is too large" if exc.status_code == 413 else str(exc.detail)
    return problem(exc.status_code, detail, headers=exc.headers)


def handle_unavailable(_: Request, exc: Unavailable) -> Response:
    return unavailable_response(exc.detail, exc.headers)


def handle_database_down(request: Request, exc: Exception) -> Response:
    log.warning("%s %s: PostgreSQL unreachable (%s)", request.method, request.url.path, type(exc).__name__)
    return unavailable_response(DATABASE_DOWN)


def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(500, "an unexpected error occurred; it has been logged")


EXCEPTION_HANDLERS = {
    CommandError: handle_command_error,
    StreamConflict: handle_stream_conflict,
    msgspec.ValidationError: handle_validation,
    HTTPException: handle_http,
    Unavailable: handle_unavailable,
    **{kind: handle_database_down for kind in DATABASE_UNAVAILABLE},
    Exception: handle_unexpected,
}
