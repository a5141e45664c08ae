"""A customer (a website's visitor or contact): profile changes, the metadata held for the visitor's
next conversation, and starting that conversation."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from commands.deciders.conversation import merged
from commands.errors import NotFound
from commands.principal import Principal
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded


@dataclass
class Customer(Folded):
    created: ev.CustomerCreated
    email: str | None = None
    user_id: str | None = None
    held_metadata: dict[str, str] = field(default_factory=dict)  # what `setMetadata` held for the next conversation


def fold_customer(history: list[Recorded]) -> Customer:
    created = history[0].event
    assert isinstance(created, ev.CustomerCreated)
    state = Customer(created.customer_id, history[-1].version, created, email=created.email, user_id=created.user_id)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.CustomerUpdated):
            state.email = event.changes.get("email", state.email)
            state.user_id = event.changes.get("userId", state.user_id)
        elif isinstance(event, ev.MetadataPending):
            state.held_metadata = merged(state.held_metadata, event.values)
        elif isinstance(event, ev.MetadataPendingTaken):
            state.held_metadata = {}
    return state


def check_pinned_customer(principal: Principal, customer: ev.CustomerCreated) -> None:
    """A key pinned to a website sees only that website's customers."""
    if principal.website_id is not None and customer.website_id != principal.website_id:
        raise NotFound("customer not found")


def decide_update(customer: Customer, changes: dict[str, str | None], at: datetime) -> list[Pending]:
    """The fields given, as given (nothing given: nothing changes)."""
    if not changes:
        return []
    return customer.follow(ev.CustomerUpdated(org_id=customer.created.org_id, at=at,
                                              customer_id=customer.created.customer_id, changes=changes))


def decide_hold_metadata(customer: Customer, values: dict[str, str | None], at: datetime) -> list[Pending]:
    """`setMetadata` while the visitor has no conversation: held for the next one."""
    merged(customer.held_metadata, values)
    return customer.follow(ev.MetadataPending(org_id=customer.created.org_id, at=at,
                                              customer_id=customer.created.customer_id, values=values))


def decide_start_conversation(principal: Principal, customer: Customer, conversation_id: uuid.UUID,
                              at: datetime) -> list[Pending]:
    """The visitor's new conversation, which takes the metadata held for it."""
    held = customer.held_metadata
    pending = [Pending(conversation_id, 1, ev.ConversationCreated(
        org_id=principal.org_id, at=at, conversation_id=conversation_id, website_id=principal.website_id,
        customer_id=customer.created.customer_id, metadata=held, actor=principal.actor))]
    if held:
        pending += customer.follow(ev.MetadataPendingTaken(org_id=principal.org_id, at=at,
                                                           customer_id=customer.created.customer_id,
                                                           conversation_id=conversation_id))
    return pending
