"""What a webhook carries: the event name and the created resource exactly as the REST API returns it.

The resource is built from the creating event with the API's own response Structs, so the two shapes
cannot drift. Internal notes and everything about operator-only conversations are never delivered:
both are hidden from the visitor, and a webhook leaves the workspace for a system we do not control."""

from __future__ import annotations

from typing import Any

import msgspec

from events import types as ev
from projections.views.attachments import WEBHOOK_LINK_SECONDS, attachment_views
from projections.views.collections import ConversationRecord, Customer, new_message
from projections.views.identities import OperatorIdentity


class Envelope(msgspec.Struct):
    event: str
    timestamp: int  # the event's commit time, Unix seconds; the same on every retry
    data: Any


def customer_data(e: ev.CustomerCreated) -> Customer:
    return Customer(id=e.customer_id, website_id=e.website_id, email=e.email, nickname=e.nickname, phone=e.phone,
                    language=e.language, user_id=e.user_id, created_at=e.at, updated_at=e.at)


def conversation_data(e: ev.ConversationCreated) -> ConversationRecord:
    return ConversationRecord(id=e.conversation_id, website_id=e.website_id, customer_id=e.customer_id,
                              created_at=e.at, last_edit_time=e.at, resolved=False, spam=False,
                              operator_only=e.operator_only, agent_paused=False,
                              metadata=e.metadata)


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
    else:
        return None
    return name, msgspec.json.encode(Envelope(name, int(event.at.timestamp()), data))
