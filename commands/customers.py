"""Creating and editing customers (a website's visitors and contacts)."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec

from commands.admin import Created
from commands.errors import Invalid
from commands.deciders.customer import Customer, check_pinned_customer, decide_update, fold_customer
from commands.principal import Principal
from commands.streams import execute, load, now
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


def load_customer(store: EventStore, principal: Principal, customer_id: uuid.UUID | None) -> Customer:
    """A customer of the principal's organization (and of its website, for a pinned key or a visitor)."""
    customer = load(store, customer_id, ev.CustomerCreated, principal.org_id, "customer")
    check_pinned_customer(principal, customer.created)
    return fold_customer(customer.history)


def update_customer(store: EventStore, principal: Principal, customer_id: uuid.UUID | None,
                    body: CustomerUpdate) -> Created:
    changes = {k: v for k, v in msgspec.structs.asdict(body).items() if v is not msgspec.UNSET}
    appended = execute(store, principal.org_id, lambda: load_customer(store, principal, customer_id),
                       lambda customer: decide_update(customer, changes, now()), retry=False)
    return Created(appended.state.created.customer_id, appended.position)
