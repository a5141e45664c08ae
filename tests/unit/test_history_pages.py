"""A page of the store decoded in one call (`events.public.PageDecoder`, what the events API and the
exports read): the same lines as each event decoded alone, every type, nothing private; a type this code
does not know, a stored U+0000 and a field an older event lacks."""

import uuid

import msgspec

from events import types as ev
from events.history import LINES, Reading, ndjson
from events.public import Line, Unknown, decode_public
from events.store import encode_event
from tests.unit.test_history_shapes import planted


def page(*stored: bytes) -> bytes:
    """Stored events as `HistoryFilter.batch_query` gives them: `[position,"stream id",{JSON}],...`."""
    return b",".join(b'[%d,"%s",%s]' % (position, str(uuid.uuid4()).encode(), json)
                     for position, json in enumerate(stored, 1))


def one_by_one(data: bytes) -> bytes:
    """The lines of `page(...)` with each event decoded alone (`decode_public`)."""
    rows = msgspec.json.decode(b"[" + data + b"]", type=list[tuple[int, str, msgspec.Raw]])
    lines = []
    for position, stream_id, stored in rows:
        topic = msgspec.json.decode(stored)["type"]
        if (found := decode_public(topic, bytes(stored))) is not None:
            lines.append(Line(position, topic, found[0], stream_id, found[1]))
    return ndjson(lines)


def test_a_page_of_every_type_reads_as_each_event_alone_and_leaves_out_what_is_private():
    events = [planted(event_type) for event_type in ev.EVENT_TYPES]
    data = page(*(encode_event(event) for event in events))
    reading = Reading()
    text = ndjson(reading.lines(LINES.decode(data)))
    assert text == one_by_one(data)
    assert reading.emitted == len(ev.PUBLIC) and reading.last == len(events)
    assert reading.omitted == {event_type.__name__: 1 for event_type in ev.EVENT_TYPES if event_type not in ev.PUBLIC}
    for event in events:
        allowed = ev.PUBLIC.get(type(event), ())
        for field in msgspec.structs.fields(event):
            if field.name not in allowed:
                assert f"CANARY-{type(event).__name__}-{field.name}-".encode() not in text, field.name


def test_a_type_this_code_does_not_know_is_counted_and_the_rest_of_the_page_still_read():
    known = planted(ev.OrganizationCreated)
    future = b'{"type":"FromANewerVersion","secret":"CANARY-FUTURE","org_id":"%s","at":"2026-01-01T00:00:00Z"}' % (
        str(known.org_id).encode())
    reading = Reading()
    rows = LINES.decode(page(encode_event(known), future))
    assert isinstance(rows[1].event, Unknown) and LINES.name_of(rows[1].event) == "FromANewerVersion"
    text = ndjson(reading.lines(rows))
    assert reading.omitted == {"FromANewerVersion": 1} and reading.emitted == 1
    assert b"CANARY-FUTURE" not in text and known.name.encode() in text


def test_a_stored_nul_is_read_as_the_replacement_character():
    stored = encode_event(planted(ev.OrganizationCreated)).replace(b"CANARY", b"\\u0000", 1)
    line = msgspec.json.decode(ndjson(Reading().lines(LINES.decode(page(stored)))))
    assert line["data"]["name"].startswith("\ufffd")


def test_a_field_an_older_event_lacks_reads_as_its_default():
    stored = encode_event(ev.ConversationUpdated(org_id=uuid.uuid4(), at=planted(ev.ConversationUpdated).at,
                                                 conversation_id=uuid.uuid4(), resolved=True))
    older = msgspec.json.decode(stored)
    del older["handoff"]
    data = page(msgspec.json.encode(older))
    assert ndjson(Reading().lines(LINES.decode(data))) == one_by_one(data)
    assert msgspec.json.decode(one_by_one(data))["data"]["handoff"] is False
