"""Who may edit or take back a message, and when: the deciders alone, on folded histories."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from commands.deciders.message import decide_delete, decide_edit, decide_visitor_delete, fold_message
from commands.errors import Conflict, Forbidden, NotFound
from commands.principal import Principal
from events import types as ev
from events.store import Recorded

ORG, AUTHOR, OTHER = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
SENT = datetime(2026, 11, 26, 12, tzinfo=timezone.utc)
WINDOW = 900.0


def operator(operator_id: uuid.UUID, role: str = "agent") -> Principal:
    return Principal("operator", ORG, uuid.uuid4(), operator_id=operator_id, role=role)


def history(*events: ev.Event, sender: str = "operator") -> list[Recorded]:
    created = ev.MessageCreated(org_id=ORG, at=SENT, message_id=uuid.uuid4(), conversation_id=uuid.uuid4(),
                                website_id=uuid.uuid4(), content="Your parcel left today.", sender=sender,
                                operator_id=AUTHOR if sender == "operator" else None)
    return [Recorded(version, created.message_id, version, event)
            for version, event in enumerate((created, *events), start=1)]


def test_the_author_edits_within_the_window_and_the_event_keeps_the_original():
    message = fold_message(history())
    [pending] = decide_edit(operator(AUTHOR), message, "Your parcel leaves tomorrow.", SENT + timedelta(minutes=14),
                            WINDOW)
    assert isinstance(pending.event, ev.MessageEdited)
    assert (pending.event.previous_content, pending.event.edited_content) == (
        "Your parcel left today.", "Your parcel leaves tomorrow.")


def test_the_author_is_refused_after_the_window_and_another_agent_always():
    message = fold_message(history())
    with pytest.raises(Forbidden):
        decide_edit(operator(AUTHOR), message, "late", SENT + timedelta(seconds=WINDOW + 1), WINDOW)
    with pytest.raises(Forbidden):
        decide_delete(operator(AUTHOR), message, SENT + timedelta(seconds=WINDOW + 1), WINDOW)
    with pytest.raises(Forbidden):
        decide_edit(operator(OTHER), message, "not mine", SENT + timedelta(seconds=1), WINDOW)


def test_an_admin_changes_any_message_at_any_time():
    message = fold_message(history())
    late = SENT + timedelta(days=30)
    assert decide_edit(operator(OTHER, "admin"), message, "fixed", late, WINDOW)
    [pending] = decide_delete(operator(OTHER, "owner"), message, late, WINDOW)
    assert pending.event.previous_content == "Your parcel left today."


def test_an_unchanged_text_writes_nothing_and_a_deleted_message_is_gone():
    message = fold_message(history())
    assert decide_edit(operator(AUTHOR), message, "Your parcel left today.", SENT, WINDOW) == []
    [deleted] = decide_delete(operator(AUTHOR), message, SENT, WINDOW)
    gone = fold_message(history(deleted.event))
    assert (gone.content, gone.deleted) == ("", True)
    with pytest.raises(NotFound):
        decide_edit(operator(AUTHOR, "admin"), gone, "back", SENT, WINDOW)


def test_the_visitor_deletes_only_their_last_unread_message():
    visitor = Principal("chat", ORG, uuid.uuid4(), customer_id=uuid.uuid4())
    records = history(sender="customer")
    message = fold_message(records)
    with pytest.raises(Conflict):
        decide_visitor_delete(visitor, message, uuid.uuid4(), SENT)  # a later message exists
    [pending] = decide_visitor_delete(visitor, message, message.created.message_id, SENT)
    assert pending.event.sender == "customer"
    read = ev.MessageRead(org_id=ORG, at=SENT, message_id=message.created.message_id,
                          conversation_id=message.created.conversation_id)
    with pytest.raises(Conflict):
        decide_visitor_delete(visitor, fold_message(history(read, sender="customer")),
                              message.created.message_id, SENT)
    with pytest.raises(NotFound):  # the team's reply is not the visitor's to delete
        decide_visitor_delete(visitor, fold_message(history()), message.created.message_id, SENT)
