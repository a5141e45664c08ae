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
from typing import Any, Callable

import msgspec

from events import types as ev
from events.store import ESCAPED_NUL, JSON_NUL


class Shape(msgspec.Struct, frozen=True, rename="camel", gc=False):
    """A public shape: its fields are written in the API's camelCase. Not tracked by the garbage collector
    (`gc=False`: it holds decoded values, never itself): an export makes millions, and each tracked one
    would bring the next full collection of the process's whole heap nearer."""


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


def twin_fields(shape: type[Shape]) -> list[tuple]:
    """The event's time as recorded, then the shape's fields under their stored (snake_case) names, ids and
    times as text: what is decoded of a stored event to show it as a line."""
    return [("at", str), *(_spec(f, _as_text(f.type)) for f in msgspec.structs.fields(shape))]


def verbatim_fields(shape: type[Shape]) -> list[tuple]:
    """`twin_fields` with every value kept as its stored JSON (`msgspec.Raw`, a default as its JSON): what a
    line writes back as it is, with no object made for it. The same text as decoding and encoding it again:
    the store wrote it with the same types (what `check` makes sure of)."""
    def spec(f: msgspec.structs.FieldInfo) -> tuple:
        default = f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default
        return (f.name, msgspec.Raw) if default is msgspec.NODEFAULT else (
            f.name, msgspec.Raw, msgspec.Raw(msgspec.json.encode(default)))
    return [("at", msgspec.Raw), *(spec(f) for f in msgspec.structs.fields(shape))]


_DECODERS = {name: (msgspec.json.Decoder(msgspec.defstruct(f"Stored{name}", twin_fields(shape))), shape)
             for name, shape in SHAPE_BY_NAME.items()}


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


class Unknown(msgspec.Struct, frozen=True, gc=False):
    """A stored event of a type this code does not know (appended by a newer version): its name only."""

    org_id: str
    type: str


class _Topic(msgspec.Struct):
    org_id: str
    type: str


class Stored(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One stored event as a page gives it: position, stream, and the event decoded as a `PageDecoder`'s twin."""

    position: int
    stream_id: str
    event: Any


class PageDecoder:
    """Decodes a page of stored events, the bytes `[position,"stream id",{stored JSON}],...` (what
    `HistoryFilter.batch_query` selects), in one call for all its events: an event of a public type into
    its twin (`org_id`, then what `fields(shape)` names: the shape's own fields only, so nothing else of the
    stored JSON is ever read), an event of any other type into its `org_id` only. `shape_of` tells a twin's
    type name and public shape; `name_of` the type name of any decoded event."""

    def __init__(self, fields: Callable[[type[Shape]], list[tuple]]) -> None:
        def twin(name: str, own: list[tuple]) -> type[msgspec.Struct]:
            return msgspec.defstruct(name, [("org_id", str), *own], tag_field="type", tag=name, frozen=True,
                                     gc=False, module=__name__)
        twins = {name: twin(name, fields(SHAPE_BY_NAME[name]) if name in SHAPE_BY_NAME else [])
                 for name in sorted(EVENT_NAMES)}
        self.shape_of: dict[type, tuple[str, type[Shape]]] = {
            twins[name]: (name, shape) for name, shape in SHAPE_BY_NAME.items()}
        self._names: dict[type, str] = {cls: name for name, cls in twins.items()}
        event = typing.Union[tuple(twins.values())]  # type: ignore[valid-type]
        row = msgspec.defstruct("StoredRow", [("position", int), ("stream_id", str), ("event", event)],
                                bases=(Stored,), array_like=True, frozen=True, module=__name__)
        self._page = msgspec.json.Decoder(list[row])  # type: ignore[valid-type]
        self._rows = msgspec.json.Decoder(list[tuple[int, str, msgspec.Raw]])
        self._event = msgspec.json.Decoder(event)
        self._topic = msgspec.json.Decoder(_Topic)

    def name_of(self, event: Any) -> str:
        return event.type if isinstance(event, Unknown) else self._names[event.__class__]

    def decode(self, page: bytes) -> list[Stored]:
        """The page's events, in its order; U+0000 read as U+FFFD, as `decode_event` does."""
        page = b"[" + readable(page) + b"]"
        try:
            return self._page.decode(page)
        except msgspec.ValidationError:  # a type this code does not know, or a stored event that is not valid
            return [Stored(position, stream_id, self._one(bytes(raw))) for position, stream_id, raw in
                    self._rows.decode(page)]

    def _one(self, stored: bytes) -> Any:
        topic = self._topic.decode(stored)
        return self._event.decode(stored) if topic.type in EVENT_NAMES else Unknown(topic.org_id, topic.type)


def readable(stored: bytes) -> bytes:
    """A stored event's JSON with U+0000 read as U+FFFD, as `decode_event` reads it."""
    return ESCAPED_NUL.sub(rb"\1\\ufffd", stored) if JSON_NUL in stored else stored


def public_of(event: ev.Event) -> Shape | None:
    """The public shape of an event already decoded, or None for a type without one."""
    shape = SHAPES.get(type(event))
    return None if shape is None else msgspec.convert(event, shape, from_attributes=True)


class Line(msgspec.Struct, frozen=True, rename={"stream_id": "streamId"}, gc=False):
    """One exported event: where it stands in history, what it is, when, in which stream, and its shape."""

    position: int
    type: str
    at: str | msgspec.Raw  # RFC 3339, UTC, as recorded (as its stored JSON when a page was read)
    stream_id: str
    data: Shape
