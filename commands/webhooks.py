"""Webhook subscriptions: subscribing, editing, disabling and re-enabling, deleting.

A subscription is a stream of events; its current state is the fold of that stream. The secret is made
here, returned once by the API, and never changes."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, replace
from typing import Annotated

import msgspec

from commands.admin import Created
from commands.customers import target_website
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from commands.streams import now
from commands.addresses import RefusedTarget, check_url
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending, StreamConflict
from events.ids import new_id

EVENT_NAMES = ("message.created", "conversation.created", "customer.created")
# Documented as the enum it is; checked by `valid_events`, which names the unknown one in its answer.
EventName = Annotated[str, msgspec.Meta(extra_json_schema={"enum": list(EVENT_NAMES)})]
FAILURE_LIMIT = 20  # the contract's rule: this many failed deliveries in a row disable the subscription


class WebhookCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    url: str
    events: list[EventName] = []


class WebhookUpdate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    url: str | msgspec.UnsetType = msgspec.UNSET
    events: list[EventName] | msgspec.UnsetType = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET
    # named only to refuse them clearly: both are immutable
    secret: str | None | msgspec.UnsetType = msgspec.UNSET
    website_id: str | None | msgspec.UnsetType = msgspec.UNSET


@dataclass(frozen=True)
class Subscription:
    subscription_id: uuid.UUID
    org_id: uuid.UUID
    website_id: uuid.UUID
    url: str
    events: list[str]
    active: bool
    version: int


def load_subscription(store: EventStore, org_id: uuid.UUID, subscription_id: uuid.UUID | None) -> Subscription:
    """The subscription's current state; another organization's, a deleted or a missing one is 404."""
    history = store.load(subscription_id) if subscription_id else []
    if not history or not isinstance(first := history[0].event, ev.WebhookSubscribed) or first.org_id != org_id:
        raise NotFound("webhook subscription not found")
    state = Subscription(first.subscription_id, first.org_id, first.website_id, first.url, first.events, True,
                         history[0].version)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.WebhookDeleted):
            raise NotFound("webhook subscription not found")
        if isinstance(event, ev.WebhookUpdated):
            state = replace(state, url=event.url or state.url,
                            events=state.events if event.events is None else event.events)
        elif isinstance(event, (ev.WebhookDisabled, ev.WebhookEnabled)):
            state = replace(state, active=isinstance(event, ev.WebhookEnabled))
        state = replace(state, version=recorded.version)
    return state


def valid_url(url: str, allow_private: bool) -> str:
    try:
        return check_url(url.strip(), allow_private=allow_private)
    except RefusedTarget as exc:
        raise Invalid(str(exc), "url") from None


def valid_events(events: list[str]) -> list[str]:
    unknown = [name for name in events if name not in EVENT_NAMES]
    if unknown:
        raise Invalid(f"unknown event {unknown[0]!r}; the events are {', '.join(EVENT_NAMES)}", "events")
    return list(dict.fromkeys(events))


def subscribe(store: EventStore, sealer: Sealer, principal: Principal, body: WebhookCreate,
              allow_private: bool) -> tuple[Created, str]:
    events = valid_events(body.events)
    url = valid_url(body.url, allow_private)
    website_id = target_website(store, principal, body.website_id)
    subscription_id, secret = new_id(), "whsec_" + secrets.token_hex(32)
    position = store.append(Pending(subscription_id, 1, ev.WebhookSubscribed(
        org_id=principal.org_id, at=now(), subscription_id=subscription_id, website_id=website_id, url=url,
        events=events, secret=sealer.seal(secret))))
    return Created(subscription_id, position), secret


def update(store: EventStore, principal: Principal, subscription_id: uuid.UUID | None, body: WebhookUpdate,
           allow_private: bool) -> Created:
    current = load_subscription(store, principal.org_id, subscription_id)
    if body.secret is not msgspec.UNSET:
        raise Invalid("the secret is immutable; create a new subscription to rotate it", "secret")
    if body.website_id is not msgspec.UNSET and body.website_id != str(current.website_id):
        raise Invalid("the website of a subscription is immutable", "websiteId")
    url = current.url if body.url is msgspec.UNSET else valid_url(body.url, allow_private)
    events = current.events if body.events is msgspec.UNSET else valid_events(body.events)
    changes: list[ev.Event] = []
    base = {"org_id": principal.org_id, "at": now(), "subscription_id": current.subscription_id}
    if url != current.url or events != current.events:
        changes.append(ev.WebhookUpdated(**base, url=url if url != current.url else None,
                                         events=events if events != current.events else None))
    if body.active is not msgspec.UNSET and body.active != current.active:
        changes.append(ev.WebhookEnabled(**base) if body.active
                       else ev.WebhookDisabled(**base, reason="disabled by an operator"))
    if not changes:
        return Created(current.subscription_id, store.org_position(principal.org_id))
    position = store.append(*(Pending(current.subscription_id, current.version + i, change)
                              for i, change in enumerate(changes, start=1)))
    return Created(current.subscription_id, position)


def delete(store: EventStore, principal: Principal, subscription_id: uuid.UUID | None) -> Created:
    current = load_subscription(store, principal.org_id, subscription_id)
    position = store.append(Pending(current.subscription_id, current.version + 1, ev.WebhookDeleted(
        org_id=principal.org_id, at=now(), subscription_id=current.subscription_id)))
    return Created(current.subscription_id, position)


def disable_after_failures(store: EventStore, org_id: uuid.UUID, subscription_id: uuid.UUID, reason: str) -> int | None:
    """The delivery worker's command: disables an active subscription; None when it is no longer active."""
    while True:
        try:
            current = load_subscription(store, org_id, subscription_id)
        except NotFound:
            return None
        if not current.active:
            return None
        try:
            return store.append(Pending(subscription_id, current.version + 1, ev.WebhookDisabled(
                org_id=org_id, at=now(), subscription_id=subscription_id, reason=reason)))
        except StreamConflict:
            continue  # an operator changed it meanwhile: decide again on the fresh state
