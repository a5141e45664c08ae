"""What of each event may leave the store: one public shape per event type, derived from its allow-list.

Every way events leave (the events API, the Parquet and JSON Lines exports, the audit trail) goes through
`SHAPES`. A shape is a msgspec Struct with the fields its event type names in `@public(...)` (events/types.py),
in the event's order, of the same type and default, so the stored JSON decodes straight into it and
everything else (hashes, secrets, anything a credential could be rebuilt from) is never even read. An
event type without an allow-list has no shape: it is left out of every export and counted (so a new event
type is private until someone writes its allow-list: see docs/history.md).
"""

from __future__ import annotations

import types
import typing
import uuid
from datetime import datetime
from typing import Any

import msgspec

from events import types as ev
from events.store import ESCAPED_NUL, JSON_NUL


class Shape(msgspec.Struct, frozen=True, rename="camel"):
    """A public shape: its fields are written in the API's camelCase."""


def _spec(f: msgspec.structs.FieldInfo, tp: Any) -> tuple:
    """A `defstruct` field named and defaulted as `f`, of type `tp`."""
    if f.default is not msgspec.NODEFAULT:
        return f.name, tp, f.default
    if f.default_factory is not msgspec.NODEFAULT:
        return f.name, tp, msgspec.field(default_factory=f.default_factory)
    return f.name, tp


def _derive(event_type: type[ev.Event], allowed: tuple[str, ...]) -> type[Shape]:
    """The public shape of `event_type`: the fields `allowed` names, in the event's order, named after it."""
    fields = [_spec(f, f.type) for f in msgspec.structs.fields(event_type) if f.name in allowed]
    return msgspec.defstruct(event_type.__name__, fields, bases=(Shape,), module=__name__, frozen=True)


SHAPES: dict[type[ev.Event], type[Shape]] = {event_type: _derive(event_type, allowed)
                                             for event_type, allowed in ev.PUBLIC.items()}

EVENT_NAMES = frozenset(event_type.__name__ for event_type in ev.EVENT_TYPES)


def check(shapes: dict[type[ev.Event], type[Shape]]) -> None:
    """Every shape is of a type in EVENT_TYPES and names fields of its event, with the event's type and
    default: what makes decoding the stored event straight into the shape sound. Raises TypeError naming
    the first that does not. (A name in an allow-list that is not a field is refused by `@public` itself.)"""
    for event_type, shape in shapes.items():
        if event_type not in ev.EVENT_TYPES:
            raise TypeError(f"{event_type.__name__} is not in events.types.EVENT_TYPES")
        fields = {f.name: f for f in msgspec.structs.fields(event_type)}
        for field in msgspec.structs.fields(shape):
            own = fields.get(field.name)
            if own is None:
                raise TypeError(f"{shape.__qualname__}.{field.name} is not a field of {event_type.__name__}")
            if (field.type, field.default, field.default_factory) != (own.type, own.default, own.default_factory):
                raise TypeError(f"{shape.__qualname__}.{field.name} differs from {event_type.__name__}'s "
                                f"in type or default")


check(SHAPES)

SHAPE_BY_NAME: dict[str, type[Shape]] = {event_type.__name__: shape for event_type, shape in SHAPES.items()}


def _as_text(tp: Any) -> Any:
    """The type a stored field is decoded as for export: ids and times as the text they are stored as,
    which encodes back to the same JSON without a UUID or datetime made and written again per value."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.Union[tuple(_as_text(arg) for arg in typing.get_args(tp))]  # type: ignore[return-value]
    return str if tp in (uuid.UUID, datetime) else tp


def _stored_twin(shape: type[Shape]) -> type[msgspec.Struct]:
    """The event's time as recorded, then the shape's fields under their stored (snake_case) names, ids
    and times as text: what is decoded of a stored event to export it."""
    return msgspec.defstruct(f"Stored{shape.__name__}",
                             [("at", str), *(_spec(f, _as_text(f.type)) for f in msgspec.structs.fields(shape))])


_DECODERS = {name: (msgspec.json.Decoder(_stored_twin(shape)), shape) for name, shape in SHAPE_BY_NAME.items()}


def decode_public(type_name: str, stored: bytes) -> tuple[str, Shape] | None:
    """The time (as recorded) and the public shape of a stored event (its JSON, as the store keeps it), or
    None for a type without a shape. Only those fields are decoded, ids and times left as their text (the
    shape is for encoding: it writes the same JSON); U+0000 is read as U+FFFD, as `decode_event` does."""
    found = _DECODERS.get(type_name)
    if found is None:
        return None
    decoder, shape = found
    at, *values = msgspec.structs.astuple(decoder.decode(readable(stored)))
    return at, shape(*values)


def readable(stored: bytes) -> bytes:
    """A stored event's JSON with U+0000 read as U+FFFD, as `decode_event` reads it."""
    return ESCAPED_NUL.sub(rb"\1\\ufffd", stored) if JSON_NUL in stored else stored


def public_of(event: ev.Event) -> Shape | None:
    """The public shape of an event already decoded, or None for a type without one."""
    shape = SHAPES.get(type(event))
    return None if shape is None else msgspec.convert(event, shape, from_attributes=True)


class Line(msgspec.Struct, frozen=True, rename={"stream_id": "streamId"}):
    """One exported event: where it stands in history, what it is, when, in which stream, and its shape."""

    position: int
    type: str
    at: str  # RFC 3339, UTC, as recorded
    stream_id: str
    data: Shape
