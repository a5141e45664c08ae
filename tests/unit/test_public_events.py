"""The allow-lists on the event types (`@public` in events/types.py) and the public shapes derived from them
(events/public.py): pure checks, no database."""

import re
import uuid
from datetime import datetime, timezone

import msgspec
import pytest

from events import public
from events import types as ev

# A name like these is never shown: a hash, a secret, a password, a signing or private key, a bearer
# credential, a token (a token's id is fine: it is how a revocation names it), a URL that may be a credential.
SECRET_LIKE = re.compile(r"hash|secret|password|signing|private|bearer|token(?!_id$)|^url$", re.IGNORECASE)


def test_every_allow_listed_name_is_a_field_of_its_event():
    for event_type, allowed in ev.PUBLIC.items():
        assert event_type in ev.EVENT_TYPES, event_type.__name__
        fields = set(event_type.__struct_fields__)
        assert set(allowed) <= fields, (event_type.__name__, set(allowed) - fields)


def test_no_allow_list_names_a_secret():
    leaks = [f"{event_type.__name__}.{name}" for event_type, allowed in ev.PUBLIC.items()
             for name in allowed if SECRET_LIKE.search(name)]
    assert not leaks


def test_secret_fields_exist_and_stay_private():
    """The rule above has something to refuse: events do hold such fields, and none is allow-listed."""
    secret_fields = {(t, f) for t in ev.EVENT_TYPES for f in t.__struct_fields__ if SECRET_LIKE.search(f)}
    assert {(ev.WebsiteCreated, "identity_secret"), (ev.OperatorCreated, "password_hash"),
            (ev.OperatorTokenIssued, "token_hash"), (ev.ApiKeyCreated, "secret_hash"),
            (ev.ChatSessionStarted, "token_hash"), (ev.WebhookSubscribed, "secret"),
            (ev.WebhookSubscribed, "url"), (ev.AgentSecretSet, "secret")} <= secret_fields
    assert not [(t, f) for t, f in secret_fields if f in ev.PUBLIC.get(t, ())]


def test_an_event_type_without_an_allow_list_has_no_public_shape():
    for event_type in ev.EVENT_TYPES:
        assert (event_type in public.SHAPES) == (event_type in ev.PUBLIC), event_type.__name__
        assert (event_type.__name__ in public.SHAPE_BY_NAME) == (event_type in ev.PUBLIC)
    assert ev.NameReserved not in ev.PUBLIC


def test_an_allow_list_is_not_inherited():
    class Subclass(ev.WebsiteUpdated, frozen=True):
        note: str

    assert Subclass not in ev.PUBLIC


def test_a_name_that_is_not_a_field_fails_at_once():
    with pytest.raises(TypeError, match="brandColour: not a field"):
        @ev.public("website_id", "brandColour")
        class Misspelt(ev.Event, frozen=True):
            website_id: uuid.UUID
            brand_colour: str


def test_a_shape_has_the_allowed_fields_in_the_events_order_with_its_types_and_defaults():
    for event_type, shape in public.SHAPES.items():
        own = {f.name: f for f in msgspec.structs.fields(event_type)}
        fields = msgspec.structs.fields(shape)
        assert [f.name for f in fields] == [name for name in own if name in ev.PUBLIC[event_type]]
        for f in fields:
            assert (f.type, f.default, f.default_factory) == (own[f.name].type, own[f.name].default,
                                                              own[f.name].default_factory)
        assert shape.__name__ == event_type.__name__  # the name the schema and the OpenAPI document show


def test_the_public_json_of_a_shape():
    """The derived shapes write what the hand-written ones wrote: camelCase, nullable, defaults, no secret."""
    assert msgspec.json.schema(public.SHAPES[ev.WebsiteCreated]) == {
        "$ref": "#/$defs/WebsiteCreated",
        "$defs": {"WebsiteCreated": {
            "title": "WebsiteCreated", "type": "object",
            "properties": {"websiteId": {"type": "string", "format": "uuid"}, "name": {"type": "string"},
                           "brandColor": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["websiteId", "name", "brandColor"]}},
    }
    ids = [uuid.UUID(int=n) for n in range(4)]
    event = ev.ConversationCreated(org_id=ids[0], at=datetime(2026, 3, 1, tzinfo=timezone.utc),
                                   conversation_id=ids[1], website_id=ids[2], customer_id=ids[3])
    assert msgspec.json.encode(public.public_of(event)) == (
        b'{"conversationId":"00000000-0000-0000-0000-000000000001",'
        b'"websiteId":"00000000-0000-0000-0000-000000000002",'
        b'"customerId":"00000000-0000-0000-0000-000000000003",'
        b'"operatorOnly":false,"actor":null,"metadata":{}}')
