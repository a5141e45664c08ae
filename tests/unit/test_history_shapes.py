"""The public shapes' allow-list: exactly a shape's fields leave the store, never a secret or a hash, and
a shape that does not match its event is refused when the module loads."""

import re
import types
import typing
import uuid
from datetime import datetime, timezone

import msgspec
import pytest

from events import public
from events import types as ev
from events.store import encode_event

SECRET_NAMES = re.compile(r"hash|secret|password|signing|private|bearer|^url$")


def sample(tp, canary: str):
    """A value of type `tp` that carries `canary` wherever it holds text."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return sample(next(a for a in args if a is not type(None)), canary)
    if tp is uuid.UUID:
        return uuid.uuid4()
    if tp is str or tp is typing.Any:  # any JSON (a readable's value): text is one
        return canary
    if tp is bool:
        return True
    if tp is bytes:  # encoded as base64: the shape's equality below is what tells a leak
        return canary.encode()
    if tp is int:
        return 7
    if tp is datetime:
        return datetime.now(timezone.utc)
    if origin in (list, tuple):
        return origin([sample(args[0], canary)])
    if origin is dict:
        return {canary + "-key": sample(args[1], canary)}
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp(**{f.name: sample(f.type, f"{canary}.{f.name}") for f in msgspec.structs.fields(tp)})
    raise AssertionError(f"no sample for {tp!r}")


def planted(event_type):
    """An event whose every text field holds a canary naming the field."""
    values = {f.name: sample(f.type, f"CANARY-{event_type.__name__}-{f.name}-")
              for f in msgspec.structs.fields(event_type)}
    return event_type(**values)


@pytest.mark.parametrize("event_type", list(public.SHAPES), ids=lambda t: t.__name__)
def test_only_the_shapes_fields_leave_the_store(event_type):
    event = planted(event_type)
    shape = public.SHAPES[event_type]
    allowed = {f.name for f in msgspec.structs.fields(shape)}
    at, decoded = public.decode_public(event_type.__name__, encode_event(event))
    assert at == msgspec.json.encode(event.at).decode().strip('"')
    for exported in (decoded, public.public_of(event)):
        text = msgspec.json.encode(exported).decode()
        for field in msgspec.structs.fields(event_type):
            canary = f"CANARY-{event_type.__name__}-{field.name}-"
            if field.name not in allowed:
                assert canary not in text, f"{field.name} leaked"
        assert msgspec.json.encode(exported) == msgspec.json.encode(shape(**{name: getattr(event, name)
                                                                            for name in allowed}))


def test_no_shape_names_a_secret():
    for shape in public.SHAPES.values():
        for field in msgspec.structs.fields(shape):
            assert not SECRET_NAMES.search(field.name), f"{shape.__name__}.{field.name}"


def test_a_type_without_a_shape_is_not_exported():
    assert ev.NameReserved not in public.SHAPES
    assert public.decode_public("NameReserved", encode_event(planted(ev.NameReserved))) is None
    assert public.public_of(planted(ev.NameReserved)) is None


def test_a_shape_that_does_not_match_its_event_is_refused():
    class WrongType(public.Shape, frozen=True):
        website_id: str

    class NotAField(public.Shape, frozen=True):
        identity: str

    class Event(ev.Event, frozen=True):
        secret: str

    class Anything(public.Shape, frozen=True):
        pass

    for shapes, detail in (({ev.WebsiteCreated: WrongType}, "differs"), ({ev.WebsiteCreated: NotAField}, "not a field"),
                           ({Event: Anything}, "EVENT_TYPES")):
        with pytest.raises(TypeError, match=detail):
            public.check(shapes)


def test_stored_nul_is_read_as_replacement_character():
    event = planted(ev.OrganizationCreated)
    stored = encode_event(event).replace(b"CANARY", b"\\u0000", 1)
    assert public.decode_public("OrganizationCreated", stored)[1].name.startswith("\ufffd")
