"""The origin of the writes in progress: who is acting and from where, stamped on what they append.

A request made with a staff credential (an operator's token, an API key, an MCP client, the CLI) sets
it once, where it is authenticated; the store stamps it on every event appended in that context (a
worker thread the command runs on inherits it), so no command has to pass it along and an event added
later is stamped like the others. A visitor's requests and the workers set none."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Sequence

import msgspec

from events.types import Event, Origin

_current: ContextVar[Origin | None] = ContextVar("parley_origin", default=None)


def acting(origin: Origin | None) -> None:
    """Sets the origin of the writes that follow in this context (a request's task, a CLI command)."""
    _current.set(origin)


def current() -> Origin | None:
    return _current.get()


def stamped(events: Sequence[Event]) -> list[Event]:
    """The events with the current origin, where they name none of their own."""
    origin = _current.get()
    if origin is None:
        return list(events)
    return [msgspec.structs.replace(event, origin=origin) if event.origin is msgspec.UNSET else event
            for event in events]
