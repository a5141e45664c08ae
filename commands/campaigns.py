"""Campaigns: the operator's drafts and state moves, and the sender's steps (start, record the audience,
send a batch, complete).

A campaign is one stream (its fold and the operator's moves: `commands/deciders/campaign.py`). Every
move appends at the stream's next version, so two moves never both
win: a cancel and a batch racing each other, or two senders sending the same batch, end with one
appended and the other refused (`StreamConflict`), which then decides again from the stream. A batch's
conversations and messages are appended in the same transaction as its `CampaignBatchSent` marker, so
a recipient gets the campaign once, whatever is killed when: the batch is in the store whole, or not at
all, and the next attempt starts after the last recorded batch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Callable, Literal

import msgspec

from commands.admin import Created
from commands.customers import target_website
from commands.deciders.campaign import (Campaign, check_text, decide_cancel, decide_delete, decide_schedule,
                                        decide_send, decide_update, fold_campaign)
from commands.errors import NotFound
from commands.messages import MAX_CONTENT
from commands.principal import Principal
from commands.streams import execute, load, now
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id

Status = Literal["draft", "scheduled", "sending", "sent", "cancelled"]
STATUSES: tuple[str, ...] = ("draft", "scheduled", "sending", "sent", "cancelled")
MAX_NAME = 200
MAX_LIST = 100  # languages or e-mail domains in one filter
MAX_DAYS = 3650
RECIPIENTS_PER_PART = 5_000  # a CampaignRecipients event stays well under a stream message's 1 MB

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME)]
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT)]
Word = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]


class AudienceBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """The audience as a request states it; `audience()` normalizes it into the event's shape."""

    language: Annotated[list[Word], msgspec.Meta(min_length=1, max_length=MAX_LIST)] | None = None
    email_domain: Annotated[list[Word], msgspec.Meta(min_length=1, max_length=MAX_LIST)] | None = None
    identified: bool | None = None
    seen_within_days: Annotated[int, msgspec.Meta(ge=1, le=MAX_DAYS)] | None = None
    has_conversation: bool | None = None

    def audience(self) -> ev.Audience:
        def folded(values: list[str] | None) -> tuple[str, ...] | None:
            return None if values is None else tuple(sorted({v.strip().lower() for v in values}))
        return ev.Audience(language=folded(self.language and [v.replace("_", "-") for v in self.language]),
                           email_domain=folded(self.email_domain and [v.strip().lstrip("@") for v in self.email_domain]),
                           identified=self.identified, seen_within_days=self.seen_within_days,
                           has_conversation=self.has_conversation)


class CampaignCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    name: Name
    content: Content
    audience: AudienceBody = msgspec.field(default_factory=AudienceBody)


class CampaignUpdate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """PUT changes only the fields it names; a campaign never moves to another website."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    content: Content | msgspec.UnsetType = msgspec.UNSET
    audience: AudienceBody | msgspec.UnsetType = msgspec.UNSET


class CampaignSchedule(msgspec.Struct, forbid_unknown_fields=True):
    at: Annotated[datetime, msgspec.Meta(tz=True)]


def load_campaign(store: EventStore, org_id: uuid.UUID, campaign_id: uuid.UUID | None) -> Campaign:
    """The organization's campaign; a missing, deleted or foreign one is 404."""
    campaign = fold_campaign(load(store, campaign_id, ev.CampaignCreated, org_id, "campaign").history)
    if campaign.deleted:
        raise NotFound("campaign not found")
    return campaign


def create_campaign(store: EventStore, principal: Principal, body: CampaignCreate) -> Created:
    website_id = target_website(store, principal, body.website_id)
    campaign_id = new_id()
    position = store.append(Pending(campaign_id, 1, ev.CampaignCreated(
        org_id=principal.org_id, at=now(), campaign_id=campaign_id, website_id=website_id,
        name=check_text(body.name, "name"), content=check_text(body.content, "content"),
        audience=body.audience.audience())))
    return Created(campaign_id, position)


def _move(store: EventStore, principal: Principal, campaign_id: uuid.UUID | None,
          decide: Callable[[Campaign], list[Pending]]) -> Created:
    """Appends the move `decide` decides, deciding again when another move wins the version meanwhile."""
    appended = execute(store, principal.org_id, lambda: load_campaign(store, principal.org_id, campaign_id), decide)
    return Created(appended.state.campaign_id, appended.position)


def update_campaign(store: EventStore, principal: Principal, campaign_id: uuid.UUID | None,
                    body: CampaignUpdate) -> Created:
    changes = {k: v for k, v in msgspec.structs.asdict(body).items() if v is not msgspec.UNSET}
    if "audience" in changes:
        changes["audience"] = body.audience.audience()  # type: ignore[union-attr]
    return _move(store, principal, campaign_id, lambda campaign: decide_update(campaign, changes, now()))


def delete_campaign(store: EventStore, principal: Principal, campaign_id: uuid.UUID | None) -> Created:
    return _move(store, principal, campaign_id, lambda campaign: decide_delete(campaign, now()))


def schedule_campaign(store: EventStore, principal: Principal, campaign_id: uuid.UUID | None,
                      body: CampaignSchedule) -> Created:
    return _move(store, principal, campaign_id, lambda campaign: decide_schedule(campaign, body.at, now()))


def send_campaign(store: EventStore, principal: Principal, campaign_id: uuid.UUID | None) -> Created:
    return _move(store, principal, campaign_id, lambda campaign: decide_send(campaign, now()))


def cancel_campaign(store: EventStore, principal: Principal, campaign_id: uuid.UUID | None) -> Created:
    return _move(store, principal, campaign_id, lambda campaign: decide_cancel(campaign, now()))


# --- the sender's steps -----------------------------------------------------------------------------------

Resolver = Callable[[Campaign], list[uuid.UUID]]


@dataclass
class Progress:
    """What one step of a send did: `finished` once there is nothing more to do for now (sent, cancelled,
    or scheduled for later); `position`, the store's position of what it appended (0 if nothing)."""

    finished: bool
    sent: int = 0
    position: int = 0


def send_step(store: EventStore, campaign: Campaign, batch_size: int, resolve: Resolver) -> Progress:
    """Takes the campaign one step on, appending at its next version: a due scheduled campaign starts; a
    started one records its audience (`resolve` reads it now); then each step sends the next batch of
    recipients; the last step completes it. `campaign` is updated in place when the step's append lands;
    on `StreamConflict` (cancelled, or another sender's step landed) the caller loads it again."""
    at, c = now(), campaign.content
    pending: list[Pending] = []

    def follow(event: ev.Event) -> None:  # the campaign's own next event
        ours = sum(1 for item in pending if item.stream_id == c.campaign_id)
        pending.append(Pending(c.campaign_id, campaign.version + 1 + ours, event))

    if campaign.status == "scheduled":
        if campaign.scheduled_at is None or campaign.scheduled_at > at:
            return Progress(True)
        follow(ev.CampaignStarted(org_id=c.org_id, at=at, campaign_id=c.campaign_id))
    elif campaign.status != "sending":
        return Progress(True)
    if campaign.recipients is None:
        recipients = resolve(campaign)
        parts = [recipients[i:i + RECIPIENTS_PER_PART] for i in range(0, len(recipients), RECIPIENTS_PER_PART)]
        for number, part in enumerate(parts or [[]]):
            follow(ev.CampaignRecipients(org_id=c.org_id, at=at, campaign_id=c.campaign_id, part=number,
                                         total=len(recipients), customer_ids=tuple(part)))
        return _landed(store, campaign, pending)
    batch = campaign.recipients[campaign.done:campaign.done + batch_size]
    if not batch:
        follow(ev.CampaignCompleted(org_id=c.org_id, at=at, campaign_id=c.campaign_id, sent=campaign.done))
        _landed(store, campaign, pending)
        return Progress(True)
    # The batch's conversations first, then its messages: the read models write a run of one kind of
    # event in one statement, where alternating kinds would cost a statement per event.
    conversations = {customer_id: new_id() for customer_id in batch}
    pending += [Pending(conversation_id, 1, ev.ConversationCreated(
        org_id=c.org_id, at=at, conversation_id=conversation_id, website_id=c.website_id, customer_id=customer_id,
        actor=ev.Actor("campaign", c.campaign_id))) for customer_id, conversation_id in conversations.items()]
    pending += [Pending(message_id, 1, ev.MessageCreated(
        org_id=c.org_id, at=at, message_id=message_id, conversation_id=conversation_id, website_id=c.website_id,
        content=c.content, sender="operator", campaign_id=c.campaign_id))
        for conversation_id, message_id in ((conversation_id, new_id()) for conversation_id in conversations.values())]
    follow(ev.CampaignBatchSent(org_id=c.org_id, at=at, campaign_id=c.campaign_id, first=campaign.done,
                                count=len(batch)))
    progress = _landed(store, campaign, pending)
    progress.sent = len(batch)
    return progress


def _landed(store: EventStore, campaign: Campaign, pending: list[Pending]) -> Progress:
    """Appends the step and, once it is in the store, applies its campaign events to `campaign`."""
    position = store.append(*pending)
    for item in pending:
        if item.stream_id == campaign.campaign_id:
            campaign.apply(item.event)
            campaign.version = item.version
    return Progress(False, position=position)
