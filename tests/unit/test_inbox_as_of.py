"""The past inbox's fold and tabs, without a server: the inbox read model's rules (unread, the AI agent's
answer, hand-off, read receipts, mentions, snooze woken by the visitor, the workflow's fields) applied to
events in order."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from events import types as ev
from events.store import Recorded
from projections.views.inbox_as_of import Reader, counts_of, fold_inbox

ORG, WEBSITE = uuid.uuid4(), uuid.uuid4()
START = datetime(2026, 11, 26, 9, tzinfo=timezone.utc)


class History:
    """Events of one conversation, a second apart."""

    def __init__(self):
        self.conversation_id, self.records = uuid.uuid4(), []
        self.add(ev.ConversationCreated, conversation_id=self.conversation_id, website_id=WEBSITE,
                 customer_id=uuid.uuid4())

    def add(self, kind, **fields):
        at = START + timedelta(seconds=len(self.records))
        event = kind(org_id=ORG, at=at, **fields)
        self.records.append(Recorded(len(self.records) + 1, uuid.uuid4(), 1, event))
        return event

    def message(self, sender="customer", **fields):
        return self.add(ev.MessageCreated, message_id=uuid.uuid4(), conversation_id=self.conversation_id,
                        website_id=WEBSITE, content=fields.pop("content", "hello"), sender=sender, **fields)

    def row(self):
        return fold_inbox(self.records)[self.conversation_id]


def test_a_visitor_message_is_unread_until_its_receipt_or_the_agent_s_answer():
    history = History()
    first = history.message()
    second = history.message()
    history.add(ev.MessageRead, message_id=first.message_id, conversation_id=history.conversation_id)
    assert history.row().unread  # a receipt on an older message does not clear it
    history.message("operator", author="agent", reply_to=second.message_id)
    assert not history.row().unread and not history.row().agent_paused
    history.add(ev.ConversationUpdated, conversation_id=history.conversation_id, agent_paused=True, handoff=True)
    assert history.row().unread  # the agent handed it to the team
    history.add(ev.MessageRead, message_id=second.message_id, conversation_id=history.conversation_id)
    assert not history.row().unread
    reply = history.message("operator", operator_id=uuid.uuid4())
    assert history.row().agent_paused and history.row().last_edit_time == reply.at


def test_workflow_fields_snooze_and_mentions_fold_as_the_conversation_does():
    history, label, me = History(), uuid.uuid4(), uuid.uuid4()
    history.message()
    history.add(ev.ConversationAssigned, conversation_id=history.conversation_id, assignee_id=me, team_id=None)
    history.add(ev.ConversationLabelsChanged, conversation_id=history.conversation_id, added=[label], removed=[])
    history.add(ev.ConversationSnoozed, conversation_id=history.conversation_id, until=None)
    history.message("operator", internal=True, content="@Ada@Example.com look.")
    assert history.row().snoozed  # a note does not wake it
    history.message()
    row = history.row()
    assert (row.assignee_id, row.labels, row.snoozed, row.mentioned) == (me, {label}, False, {"ada@example.com"})
    history.add(ev.ConversationUpdated, conversation_id=history.conversation_id, resolved=True)
    counts = counts_of([history.row()], Reader(me, "ada@example.com"))
    assert (counts.all, counts.resolved, counts.unresolved, counts.mentions, counts.spam) == (1, 1, 0, 1, 0)
    history.add(ev.ConversationUpdated, conversation_id=history.conversation_id, spam=True)
    counts = counts_of([history.row()], Reader(uuid.uuid4(), "bob@example.com"))
    assert (counts.all, counts.resolved, counts.mentions, counts.spam) == (0, 0, 0, 1)


def test_events_of_unknown_conversations_are_ignored():
    history = History()
    stray = history.add(ev.MessageRead, message_id=uuid.uuid4(), conversation_id=uuid.uuid4())
    assert set(fold_inbox(history.records)) == {history.conversation_id} and stray
