"""Deprecation signals: a route handler declared `@deprecated(...)` answers with `Deprecation`
(RFC 9745, `@<unix seconds>`), `Sunset` (RFC 8594, an HTTP-date) and `Link: <url>; rel="deprecation"`.

The contract promises at least 180 days between the announcement and the removal, so an app whose
declarations promise less refuses to be created (and the service to start)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from email.utils import format_datetime
from functools import cached_property
from typing import Any, Iterable

from litestar.handlers import HTTPRouteHandler

MINIMUM_NOTICE = timedelta(days=180)
OPT_KEY = "parley_deprecation"


class DeprecationNoticeTooShort(ValueError):
    """A declared sunset comes sooner than the contract's minimum notice."""


def _midnight_utc(day: date) -> datetime:
    return datetime.combine(day, time(), timezone.utc)


@dataclass(frozen=True)
class Deprecation:
    deprecation: date
    sunset: date
    link: str

    @cached_property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"deprecation", f"@{int(_midnight_utc(self.deprecation).timestamp())}".encode()),
                (b"sunset", format_datetime(_midnight_utc(self.sunset), usegmt=True).encode()),
                (b"link", f'<{self.link}>; rel="deprecation"'.encode())]


def deprecated(*, deprecation: date, sunset: date, link: str):
    """Declares a route deprecated; put it above the route decorator (`@deprecated(...)` then `@get(...)`)."""
    def declare(handler: HTTPRouteHandler) -> HTTPRouteHandler:
        handler.opt[OPT_KEY] = Deprecation(deprecation, sunset, link)
        handler.deprecated = True  # and the OpenAPI document says so
        return handler
    return declare


def check_notice(handlers: Iterable[HTTPRouteHandler]) -> None:
    for handler in handlers:
        declared: Deprecation | None = handler.opt.get(OPT_KEY)
        if declared and declared.sunset < declared.deprecation + MINIMUM_NOTICE:
            raise DeprecationNoticeTooShort(
                f"{sorted(handler.paths)}: sunset {declared.sunset} is less than {MINIMUM_NOTICE.days} days "
                f"after the deprecation date {declared.deprecation}")


def deprecation_headers(route_handler: Any) -> list[tuple[bytes, bytes]]:
    """The headers of a deprecated route (none for a current route, or without one)."""
    declared = route_handler.opt.get(OPT_KEY) if route_handler is not None else None
    return declared.headers if declared else []
