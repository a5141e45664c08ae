"""Starting conversations."""

from __future__ import annotations

import msgspec

from commands.admin import Created
from commands.errors import Forbidden, Invalid
from commands.principal import Principal
from commands.streams import load, now
from events import types as ev
from events.store import EventStore, Pending
from parley.ids import new_id, parse_id


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
        customer_id=customer.created.customer_id, operator_only=body.operator_only)))
    return Created(conversation_id, position)
