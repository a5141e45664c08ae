"""Creating and editing customers (a website's visitors and contacts)."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec

from commands.admin import Created
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import load, now
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id, parse_id

Field = Annotated[str, msgspec.Meta(max_length=320)]


class CustomerCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    email: Field | None = None
    nickname: Field | None = None
    phone: Field | None = None
    language: Annotated[str, msgspec.Meta(max_length=35)] | None = None
    website_id: str | None = None


class CustomerUpdate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    email: Field | None | msgspec.UnsetType = msgspec.UNSET
    nickname: Field | None | msgspec.UnsetType = msgspec.UNSET
    phone: Field | None | msgspec.UnsetType = msgspec.UNSET
    language: Annotated[str, msgspec.Meta(max_length=35)] | None | msgspec.UnsetType = msgspec.UNSET


def target_website(store: EventStore, principal: Principal, website_id: str | None) -> uuid.UUID:
    """A pinned key writes to its website; anyone else names one in the body."""
    if principal.website_id is not None:
        if website_id is not None and parse_id(website_id) != principal.website_id:
            raise Invalid("this key is pinned to another website", "websiteId")
        return principal.website_id
    if website_id is None:
        raise Invalid("websiteId is required unless the key is pinned to a website", "websiteId")
    parsed = parse_id(website_id)
    if parsed is None:
        raise Invalid("websiteId does not name a website", "websiteId")
    load(store, parsed, ev.WebsiteCreated, principal.org_id, "website")
    return parsed


def create_customer(store: EventStore, principal: Principal, body: CustomerCreate) -> Created:
    website_id = target_website(store, principal, body.website_id)
    customer_id = new_id()
    position = store.append(Pending(customer_id, 1, ev.CustomerCreated(
        org_id=principal.org_id, at=now(), customer_id=customer_id, website_id=website_id, email=body.email,
        nickname=body.nickname, phone=body.phone, language=body.language)))
    return Created(customer_id, position)


def update_customer(store: EventStore, principal: Principal, customer_id: uuid.UUID | None,
                    body: CustomerUpdate) -> Created:
    customer = load(store, customer_id, ev.CustomerCreated, principal.org_id, "customer")
    if principal.website_id is not None and customer.created.website_id != principal.website_id:
        load(store, None, ev.CustomerCreated, principal.org_id, "customer")
    changes = {k: v for k, v in msgspec.structs.asdict(body).items() if v is not msgspec.UNSET}
    if not changes:
        return Created(customer.created.customer_id, store.org_position(principal.org_id))
    position = store.append(Pending(customer.created.customer_id, customer.version + 1, ev.CustomerUpdated(
        org_id=principal.org_id, at=now(), customer_id=customer.created.customer_id, changes=changes)))
    return Created(customer.created.customer_id, position)
