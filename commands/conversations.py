"""Starting conversations and changing their flags (resolved, spam)."""

from __future__ import annotations

import uuid

import msgspec

from commands.admin import Created
from commands.deciders.conversation import (Conversation, check_may_flag, check_may_start, decide_flags, decide_start,
                                            fold_conversation)
from commands.errors import Invalid
from commands.messages import load_conversation
from commands.principal import Principal
from commands.streams import execute, load, now
from events import types as ev
from events.store import EventStore
from events.ids import new_id, parse_id


class ConversationCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    customer_id: str
    operator_only: bool = False


def create_conversation(store: EventStore, principal: Principal, body: ConversationCreate) -> Created:
    check_may_start(principal, body.operator_only)
    website_id = parse_id(body.website_id)
    if website_id is None:
        raise Invalid("websiteId does not name a website", "websiteId")
    if principal.website_id is not None and website_id != principal.website_id:
        raise Invalid("this key is pinned to another website", "websiteId")
    website = load(store, website_id, ev.WebsiteCreated, principal.org_id, "website").created
    customer = load(store, parse_id(body.customer_id), ev.CustomerCreated, principal.org_id, "customer").created
    conversation_id = new_id()
    position = store.append(*decide_start(principal, website, customer, conversation_id=conversation_id,
                                          operator_only=body.operator_only, at=now()))
    return Created(conversation_id, position)


class ConversationFlags(msgspec.Struct, forbid_unknown_fields=True, rename={"agent_paused": "agentPaused"}):
    resolved: bool | None = None
    spam: bool | None = None
    agent_paused: bool | None = None  # pauses or resumes the website's AI agent in this conversation


def load_flags(store: EventStore, principal: Principal, conversation_id: uuid.UUID | None) -> Conversation:
    return fold_conversation(load_conversation(store, principal, conversation_id).history)


def update_flags(store: EventStore, principal: Principal, conversation_id: uuid.UUID | None,
                 body: ConversationFlags) -> Created:
    """Resolving, reopening and (un)marking spam are idempotent; no other field of the conversation
    changes. The decision is taken again when a concurrent write to the conversation wins the version."""
    check_may_flag(principal)
    appended = execute(store, principal.org_id, lambda: load_flags(store, principal, conversation_id),
                       lambda conversation: decide_flags(conversation, principal.actor, now(), resolved=body.resolved,
                                                         spam=body.spam, agent_paused=body.agent_paused))
    return Created(appended.state.created.conversation_id, appended.position)
