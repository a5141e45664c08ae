"""A webhook subscription: editing, disabling and re-enabling, deleting."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from msgspec import UNSET, UnsetType

from commands.errors import Invalid
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded


@dataclass
class Subscription(Folded):
    org_id: uuid.UUID
    website_id: uuid.UUID
    url: str
    events: list[str]
    active: bool = True
    deleted: bool = False

    @property
    def subscription_id(self) -> uuid.UUID:
        return self.stream_id


def fold_subscription(history: list[Recorded]) -> Subscription:
    first = history[0].event
    assert isinstance(first, ev.WebhookSubscribed)
    state = Subscription(first.subscription_id, history[-1].version, first.org_id, first.website_id, first.url,
                         first.events)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.WebhookDeleted):
            state.deleted = True
        elif isinstance(event, ev.WebhookUpdated):
            state.url = event.url or state.url
            state.events = state.events if event.events is None else event.events
        elif isinstance(event, (ev.WebhookDisabled, ev.WebhookEnabled)):
            state.active = isinstance(event, ev.WebhookEnabled)
    return state


def check_immutable(subscription: Subscription, secret: str | None | UnsetType,
                    website_id: str | None | UnsetType) -> None:
    """An edit may not name a secret, nor another website."""
    if secret is not UNSET:
        raise Invalid("the secret is immutable; create a new subscription to rotate it", "secret")
    if website_id is not UNSET and website_id != str(subscription.website_id):
        raise Invalid("the website of a subscription is immutable", "websiteId")


def decide_update(subscription: Subscription, at: datetime, *, url: str | UnsetType = UNSET,
                  events: list[str] | UnsetType = UNSET, active: bool | UnsetType = UNSET,
                  known_events: list[str] | None = None) -> list[Pending]:
    """The URL and events (checked already) as given, and the subscription (re-)enabled or disabled;
    nothing for what it has already."""
    url = subscription.url if url is UNSET else url
    events = subscription.events if events is UNSET else events
    base = {"org_id": subscription.org_id, "at": at, "subscription_id": subscription.subscription_id}
    changes: list[ev.Event] = []
    if url != subscription.url or events != subscription.events:
        changes.append(ev.WebhookUpdated(**base, url=url if url != subscription.url else None,
                                         events=events if events != subscription.events else None,
                                         known_events=known_events if events != subscription.events else None))
    if active is not UNSET and active != subscription.active:
        changes.append(ev.WebhookEnabled(**base) if active
                       else ev.WebhookDisabled(**base, reason="disabled by an operator"))
    return subscription.follow(*changes)


def decide_delete(subscription: Subscription, at: datetime) -> list[Pending]:
    return subscription.follow(ev.WebhookDeleted(org_id=subscription.org_id, at=at,
                                                 subscription_id=subscription.subscription_id))


def decide_disable_after_failures(subscription: Subscription, reason: str, at: datetime) -> list[Pending]:
    """The delivery worker's decision: an active subscription is disabled; nothing otherwise."""
    if not subscription.active:
        return []
    return subscription.follow(ev.WebhookDisabled(org_id=subscription.org_id, at=at,
                                                  subscription_id=subscription.subscription_id, reason=reason))
