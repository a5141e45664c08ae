"""What a webhook carries: the event name and the created resource exactly as the REST API returns it.

The resource is built from the creating event with the API's own response Structs, so the two shapes
cannot drift. Internal notes and everything about operator-only conversations are never delivered:
both are hidden from the visitor, and a webhook leaves the workspace for a system we do not control."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Mapping

import msgspec

from events import types as ev
from projections.richtext import render_markdown
from projections.views.attachments import WEBHOOK_LINK_SECONDS, attachment_views
from projections.views.collections import (ConversationRecord, Customer, Message, new_conversation_record,
                                           new_message)
from projections.views.identities import OperatorIdentity


class Envelope(msgspec.Struct):
    event: str
    timestamp: int  # the event's commit time, Unix seconds; the same on every retry
    data: Any


def customer_data(e: ev.CustomerCreated) -> Customer:
    return Customer(id=e.customer_id, website_id=e.website_id, email=e.email, nickname=e.nickname, phone=e.phone,
                    language=e.language, user_id=e.user_id, created_at=e.at, updated_at=e.at)


def conversation_data(e: ev.ConversationCreated) -> ConversationRecord:
    return new_conversation_record(e)


class ConversationAssignedData(msgspec.Struct, rename="camel"):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    assignee_id: uuid.UUID | None  # the operator who owns it now (null: nobody)
    team_id: uuid.UUID | None


class ConversationStateData(msgspec.Struct, rename="camel"):
    """A conversation resolved or reopened."""

    conversation_id: uuid.UUID
    website_id: uuid.UUID


class LabelRef(msgspec.Struct, rename={"id": "_id"}):
    id: uuid.UUID
    name: str | None  # null for a label deleted since


class ConversationLabeledData(msgspec.Struct, rename="camel"):
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    added: list[LabelRef]
    removed: list[LabelRef]


class MessageChange(msgspec.Struct, rename={"id": "_id", "conversation_id": "conversationId",
                                            "website_id": "websiteId", "content_html": "contentHtml",
                                            "edited_at": "editedAt"}):
    """What `message.updated` and `message.deleted` carry: the message's new text (empty once deleted),
    never the text it had."""

    id: uuid.UUID
    conversation_id: uuid.UUID
    website_id: uuid.UUID
    content: str
    content_html: str
    edited_at: datetime | None
    deleted: bool


def message_change(event: ev.MessageEdited | ev.MessageDeleted) -> MessageChange:
    if isinstance(event, ev.MessageEdited):
        return MessageChange(event.message_id, event.conversation_id, event.website_id, event.edited_content,
                             render_markdown(event.edited_content), event.at, False)
    return MessageChange(event.message_id, event.conversation_id, event.website_id, "", "", None, True)


# What the workflow's webhook events carry, by name (the OpenAPI document's `webhooks` section shows them).
WORKFLOW_WEBHOOKS: dict[str, type[msgspec.Struct]] = {
    "conversation.assigned": ConversationAssignedData, "conversation.resolved": ConversationStateData,
    "conversation.reopened": ConversationStateData, "conversation.labeled": ConversationLabeledData}
# Every webhook event's `data`, by name
WEBHOOK_DATA: dict[str, type[msgspec.Struct]] = {
    "message.created": Message, "conversation.created": ConversationRecord, "customer.created": Customer,
    **WORKFLOW_WEBHOOKS, "message.updated": MessageChange, "message.deleted": MessageChange}
WORKFLOW_EVENTS = (ev.ConversationAssigned, ev.ConversationUpdated, ev.ConversationLabelsChanged)


def workflow_webhook_event(event: ev.Event, website_id: uuid.UUID,
                           label_names: Mapping[uuid.UUID, str]) -> tuple[str, bytes] | None:
    """(event name, body) for a change of the team's workflow on a conversation that is not operator-only."""
    data: msgspec.Struct
    if isinstance(event, ev.ConversationAssigned):
        name, data = "conversation.assigned", ConversationAssignedData(event.conversation_id, website_id,
                                                                       event.assignee_id, event.team_id)
    elif isinstance(event, ev.ConversationUpdated) and event.resolved is not None:
        name = "conversation.resolved" if event.resolved else "conversation.reopened"
        data = ConversationStateData(event.conversation_id, website_id)
    elif isinstance(event, ev.ConversationLabelsChanged):
        name, data = "conversation.labeled", ConversationLabeledData(
            event.conversation_id, website_id, [LabelRef(i, label_names.get(i)) for i in event.added],
            [LabelRef(i, label_names.get(i)) for i in event.removed])
    else:
        return None
    return name, msgspec.json.encode(Envelope(name, int(event.at.timestamp()), data))


def webhook_event(event: ev.Event, private_conversation: bool,
                  operator: OperatorIdentity | None = None) -> tuple[str, bytes] | None:
    """(event name, body) when this event is delivered to webhooks, else None. `private_conversation`
    says whether the event's conversation is operator-only; `operator`, who of the team wrote a message."""
    if isinstance(event, ev.CustomerCreated):
        name, data = "customer.created", customer_data(event)
    elif isinstance(event, ev.ConversationCreated) and not event.operator_only:
        name, data = "conversation.created", conversation_data(event)
    elif isinstance(event, ev.MessageCreated) and not event.internal and not private_conversation:
        name, data = "message.created", new_message(event, operator)
        # the receiver may fetch the files later than a reader would: its links last longer
        data.attachments = attachment_views(event.attachments, WEBHOOK_LINK_SECONDS)
    elif isinstance(event, (ev.MessageEdited, ev.MessageDeleted)) and not event.internal and not private_conversation:
        name = "message.updated" if isinstance(event, ev.MessageEdited) else "message.deleted"
        data = message_change(event)
    else:
        return None
    return name, msgspec.json.encode(Envelope(name, int(event.at.timestamp()), data))
