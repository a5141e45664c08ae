"""A campaign: the operator's drafts and state moves (edit, delete, schedule, send, cancel). The sender's
steps, which also decide from this fold, are in `commands/campaigns.py`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from commands.errors import Conflict, Invalid
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded


class StateConflict(Conflict):
    """An illegal move: the answer names the campaign's current state."""

    def __init__(self, detail: str, current: str):
        super().__init__(detail)
        self.extensions = {"campaignStatus": current}


@dataclass
class Campaign(Folded):
    """A campaign's state, folded from its stream."""

    content: ev.CampaignContent
    status: str = "draft"
    deleted: bool = False
    scheduled_at: datetime | None = None
    recipients: list[uuid.UUID] | None = None  # resolved when the send starts
    done: int = 0  # recipients sent to, in order
    parts: int = 0

    @property
    def campaign_id(self) -> uuid.UUID:
        return self.content.campaign_id

    def apply(self, event: ev.Event) -> None:
        if isinstance(event, ev.CampaignContent):
            self.content = event
        elif isinstance(event, ev.CampaignDeleted):
            self.deleted = True
        elif isinstance(event, ev.CampaignScheduled):
            self.status, self.scheduled_at = "scheduled", event.scheduled_at
        elif isinstance(event, ev.CampaignStarted):
            self.status = "sending"
        elif isinstance(event, ev.CampaignRecipients):
            self.recipients = (self.recipients or []) + list(event.customer_ids)
            self.parts += 1
        elif isinstance(event, ev.CampaignBatchSent):
            self.done = event.first + event.count
        elif isinstance(event, ev.CampaignCompleted):
            self.status = "sent"
        elif isinstance(event, ev.CampaignCancelled):
            self.status = "cancelled"


def fold_campaign(history: list[Recorded]) -> Campaign:
    created = history[0].event
    assert isinstance(created, ev.CampaignCreated)
    campaign = Campaign(created.campaign_id, history[-1].version, created)
    for recorded in history[1:]:
        campaign.apply(recorded.event)
    return campaign


def check_text(value: str, name: str) -> str:
    if not value.strip():
        raise Invalid(f"{name} must not be empty", name)
    return value


def _allowed(campaign: Campaign, allowed: tuple[str, ...], what: str) -> None:
    if campaign.status not in allowed:
        raise StateConflict(f"the campaign is {campaign.status}; only a {' or '.join(allowed)} campaign can be "
                            f"{what}", campaign.status)


def decide_update(campaign: Campaign, changes: dict[str, Any], at: datetime) -> list[Pending]:
    """A draft's name, content or audience (normalized already); nothing when they are unchanged."""
    _allowed(campaign, ("draft",), "edited")
    old = campaign.content
    for name in ("name", "content"):
        if name in changes:
            check_text(changes[name], name)
    before = {"name": old.name, "content": old.content, "audience": old.audience}
    fields = {**before, **changes}
    if fields == before:
        return []
    return campaign.follow(ev.CampaignUpdated(org_id=old.org_id, at=at, campaign_id=old.campaign_id,
                                              website_id=old.website_id, **fields))


def decide_delete(campaign: Campaign, at: datetime) -> list[Pending]:
    _allowed(campaign, ("draft",), "deleted")
    return campaign.follow(ev.CampaignDeleted(org_id=campaign.content.org_id, at=at, campaign_id=campaign.campaign_id,
                                              website_id=campaign.content.website_id))


def decide_schedule(campaign: Campaign, scheduled_at: datetime, at: datetime) -> list[Pending]:
    """From a draft, or again to move a scheduled campaign's time."""
    _allowed(campaign, ("draft", "scheduled"), "scheduled")
    if scheduled_at <= at:
        raise Invalid("at must be in the future; POST .../send sends now", "at")
    return campaign.follow(ev.CampaignScheduled(org_id=campaign.content.org_id, at=at,
                                                campaign_id=campaign.campaign_id, scheduled_at=scheduled_at))


def decide_send(campaign: Campaign, at: datetime) -> list[Pending]:
    _allowed(campaign, ("draft", "scheduled"), "sent")
    return campaign.follow(ev.CampaignStarted(org_id=campaign.content.org_id, at=at, campaign_id=campaign.campaign_id))


def decide_cancel(campaign: Campaign, at: datetime) -> list[Pending]:
    _allowed(campaign, ("draft", "scheduled", "sending"), "cancelled")
    return campaign.follow(ev.CampaignCancelled(org_id=campaign.content.org_id, at=at,
                                                campaign_id=campaign.campaign_id))
