"""Webhook subscriptions: subscribing, editing, disabling and re-enabling, deleting.

A subscription is a stream of events; its current state is the fold of that stream. The secret is made
here, returned once by the API, and never changes."""

from __future__ import annotations

import secrets
import uuid
from typing import Annotated

import msgspec

from commands.admin import Created
from commands.customers import target_website
from commands.errors import Invalid, NotFound
from commands.addresses import RefusedTarget, check_url
from commands.deciders.webhook import (Subscription, check_immutable, decide_delete, decide_disable_after_failures,
                                       decide_update, fold_subscription)
from commands.principal import Principal
from commands.streams import execute, now
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending
from events.ids import new_id

# The events an empty `events` list meant before any other kind was added: what it still means for the
# subscriptions recorded then (they carry no `known_events`).
FIRST_EVENT_NAMES = ("message.created", "conversation.created", "customer.created")
EVENT_NAMES = (*FIRST_EVENT_NAMES, "conversation.assigned", "conversation.resolved", "conversation.reopened",
               "conversation.labeled", "message.updated", "message.deleted")
EVERY_EVENT = "*"  # every event, now and later (docs/decisions.md)
# Documented as the enum it is; checked by `valid_events`, which names the unknown one in its answer.
EventName = Annotated[str, msgspec.Meta(extra_json_schema={"enum": [*EVENT_NAMES, EVERY_EVENT]})]
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


def load_subscription(store: EventStore, org_id: uuid.UUID, subscription_id: uuid.UUID | None) -> Subscription:
    """The subscription's current state; another organization's, a deleted or a missing one is 404."""
    history = store.load(subscription_id) if subscription_id else []
    if not history or not isinstance(first := history[0].event, ev.WebhookSubscribed) or first.org_id != org_id:
        raise NotFound("webhook subscription not found")
    state = fold_subscription(history)
    if state.deleted:
        raise NotFound("webhook subscription not found")
    return state


def valid_url(url: str, allow_private: bool) -> str:
    try:
        return check_url(url.strip(), allow_private=allow_private)
    except RefusedTarget as exc:
        raise Invalid(str(exc), "url") from None


def known_events(events: list[str]) -> list[str] | None:
    """What an empty list stands for, recorded with it: the events there are now (and no more, later)."""
    return None if events else list(EVENT_NAMES)


def valid_events(events: list[str]) -> list[str]:
    unknown = [name for name in events if name not in EVENT_NAMES and name != EVERY_EVENT]
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
        events=events, secret=sealer.seal(secret), known_events=known_events(events))))
    return Created(subscription_id, position), secret


def update(store: EventStore, principal: Principal, subscription_id: uuid.UUID | None, body: WebhookUpdate,
           allow_private: bool) -> Created:
    def decide(current: Subscription) -> list[Pending]:
        check_immutable(current, body.secret, body.website_id)
        events = body.events if body.events is msgspec.UNSET else valid_events(body.events)
        return decide_update(current, now(),
                             url=body.url if body.url is msgspec.UNSET else valid_url(body.url, allow_private),
                             events=events, active=body.active,
                             known_events=None if events is msgspec.UNSET else known_events(events))
    appended = execute(store, principal.org_id, lambda: load_subscription(store, principal.org_id, subscription_id),
                       decide, retry=False)
    return Created(appended.state.subscription_id, appended.position)


def delete(store: EventStore, principal: Principal, subscription_id: uuid.UUID | None) -> Created:
    appended = execute(store, principal.org_id, lambda: load_subscription(store, principal.org_id, subscription_id),
                       lambda current: decide_delete(current, now()), retry=False)
    return Created(appended.state.subscription_id, appended.position)


def disable_after_failures(store: EventStore, org_id: uuid.UUID, subscription_id: uuid.UUID, reason: str) -> int | None:
    """The delivery worker's command: disables an active subscription; None when it is no longer active
    (decided again when an operator changed it meanwhile)."""
    try:
        appended = execute(store, org_id, lambda: load_subscription(store, org_id, subscription_id),
                           lambda current: decide_disable_after_failures(current, reason, now()))
    except NotFound:
        return None
    return appended.position if appended.pending else None
