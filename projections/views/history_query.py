"""The history's filters as query parameters (the events API, the export route, the CLI's options):
parsed and refused with the parameter at fault, before anything is read."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Mapping

from commands.errors import Forbidden, Invalid
from events.history import HistoryFilter
from events.public import EVENT_NAMES
from events.ids import parse_id
from projections.views.collections import parse_int


def parse_time(params: Mapping[str, str], name: str) -> datetime | None:
    raw = params.get(name)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise Invalid(f"{name} must be an RFC 3339 time, like 2026-01-31T12:00:00Z", name) from None
    if value.tzinfo is None:
        raise Invalid(f"{name} must name its time zone (Z or an offset)", name)
    return value


def parse_id_param(params: Mapping[str, str], name: str):
    raw = params.get(name)
    if raw is None:
        return None  # an empty one is malformed, as parse_id says
    value = parse_id(raw)
    if value is None:
        raise Invalid(f"{name} is not a valid id", name)
    return value


def history_filter(org_id: uuid.UUID, params: Mapping[str, str], pinned: uuid.UUID | None = None) -> HistoryFilter:
    """The filters of a request (or of the CLI's options), checked before anything is read; the website a
    key is `pinned` to is imposed."""
    until, until_time = params.get("until"), None
    if until and not (until.isascii() and until.isdigit()):
        until, until_time = None, parse_time(params, "until")
    types = None
    if params.get("types"):
        types = tuple(name.strip() for name in params["types"].split(",") if name.strip())
        if unknown := sorted(set(types) - EVENT_NAMES):
            raise Invalid(f"unknown event type {unknown[0]!r}; known: {', '.join(sorted(EVENT_NAMES))}", "types")
    website_id = parse_id_param(params, "websiteId")
    if pinned is not None:
        if website_id not in (None, pinned):
            raise Forbidden("this API key is pinned to another website")
        website_id = pinned
    return HistoryFilter(
        org_id, after=parse_int(params, "after"), until=parse_int(params, "until") if until else None,
        since=parse_time(params, "since"), until_time=until_time, types=types, website_id=website_id,
        conversation_id=parse_id_param(params, "conversationId"))
