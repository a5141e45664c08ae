"""Starting conversations and changing their flags (resolved, spam)."""

from __future__ import annotations

import uuid

import msgspec

from commands.admin import Created
from commands.errors import Forbidden, Invalid
from commands.messages import load_conversation
from commands.principal import Principal
from commands.streams import Entity, load, now
from events import types as ev
from events.store import EventStore, Pending, StreamConflict
from events.ids import new_id, parse_id


class ConversationCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    customer_id: str
    operator_only: bool = False


def create_conversation(store: EventStore, principal: Principal, body: ConversationCreate) -> Created:
    if body.operator_only and not principal.is_operator:
        raise Forbidden("only an operator can start an operator-only conversation")
    website_id = parse_id(body.website_id)
    if website_id is None:
        raise Invalid("websiteId does not name a website", "websiteId")
    if principal.website_id is not None and website_id != principal.website_id:
        raise Invalid("this key is pinned to another website", "websiteId")
    load(store, website_id, ev.WebsiteCreated, principal.org_id, "website")
    customer = load(store, parse_id(body.customer_id), ev.CustomerCreated, principal.org_id, "customer")
    if customer.created.website_id != website_id:
        raise Invalid("the customer belongs to another website", "customerId")
    conversation_id = new_id()
    position = store.append(Pending(conversation_id, 1, ev.ConversationCreated(
        org_id=principal.org_id, at=now(), conversation_id=conversation_id, website_id=website_id,
        customer_id=customer.created.customer_id, operator_only=body.operator_only, actor=principal.actor)))
    return Created(conversation_id, position)


class ConversationFlags(msgspec.Struct, forbid_unknown_fields=True, rename={"agent_paused": "agentPaused"}):
    resolved: bool | None = None
    spam: bool | None = None
    agent_paused: bool | None = None  # pauses or resumes the website's AI agent in this conversation


def current_flags(conversation: Entity[ev.ConversationCreated]) -> dict[str, bool]:
    flags = {"resolved": False, "spam": False}
    for recorded in conversation.history:
        if isinstance(recorded.event, ev.ConversationUpdated):
            flags.update({k: v for k in flags if (v := getattr(recorded.event, k)) is not None})
    return flags


def update_flags(store: EventStore, principal: Principal, conversation_id: uuid.UUID | None,
                 body: ConversationFlags) -> Created:
    """Resolving, reopening and (un)marking spam are idempotent: only a flag that differs is recorded,
    and no other field of the conversation changes. The decision is retried when a concurrent write
    to the conversation wins the version, since re-deciding is safe."""
    if not principal.is_operator:
        raise Forbidden("only an operator can resolve or mark a conversation")
    while True:
        conversation = load_conversation(store, principal, conversation_id)
        flags = current_flags(conversation)
        asked = {k: getattr(body, k) for k in flags}
        changes = {k: v for k, v in asked.items() if v is not None and flags[k] != v}
        if body.agent_paused is not None:
            # Recorded each time it is given: an operator's reply also pauses the agent, without an event
            # of its own on this stream, so the fold here cannot tell whether it is paused already.
            changes["agent_paused"] = body.agent_paused
        if not changes:
            return Created(conversation.created.conversation_id, store.org_position(principal.org_id))
        try:
            position = store.append(Pending(conversation.created.conversation_id, conversation.version + 1,
                                            ev.ConversationUpdated(org_id=principal.org_id, at=now(),
                                                                   conversation_id=conversation.created.conversation_id,
                                                                   actor=principal.actor, **changes)))
        except StreamConflict:
            continue
        return Created(conversation.created.conversation_id, position)
