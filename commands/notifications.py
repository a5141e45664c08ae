"""An operator's notifications: marking them read, choosing the channels of each kind.

Neither decides anything from a stream (a mark names the notifications, the preferences are whole), so each
write is a stream of its own at version 1 and never conflicts."""

from __future__ import annotations

import uuid

import msgspec

from commands.admin import Created
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import now
from events import types as ev
from events.ids import new_id
from events.store import EventStore, Pending

MAX_IDS = 500


class MarkRead(msgspec.Struct, forbid_unknown_fields=True):
    """`{ids}` marks these notifications read; `{all: true}` marks every one of yours made so far."""

    ids: list[uuid.UUID] | None = None
    all: bool = False


class Preferences(msgspec.Struct, forbid_unknown_fields=True):
    """The channels for each kind: a kind left out keeps its current choice."""

    conversation_new: ev.ChannelChoice | None = msgspec.field(default=None, name="conversation.new")
    message_new: ev.ChannelChoice | None = msgspec.field(default=None, name="message.new")
    mention: ev.ChannelChoice | None = None
    assignment: ev.ChannelChoice | None = None
    handoff: ev.ChannelChoice | None = None
    webhook_disabled: ev.ChannelChoice | None = msgspec.field(default=None, name="webhook.disabled")

    def given(self) -> dict[str, ev.ChannelChoice]:
        return {kind: choice for kind in ev.NOTIFICATION_KINDS
                if (choice := getattr(self, kind.replace(".", "_"))) is not None}


def check_mark(body: MarkRead) -> list[uuid.UUID]:
    """The ids to mark (none with `all`); anything else is refused before a write."""
    if body.all == bool(body.ids):
        raise Invalid("send either `ids` (a non-empty list) or `all: true`", "ids")
    if body.ids and len(body.ids) > MAX_IDS:
        raise Invalid(f"at most {MAX_IDS} ids at once", "ids")
    return sorted(set(body.ids or ()))


def mark_read(store: EventStore, principal: Principal, ids: list[uuid.UUID], everything: bool) -> Created:
    stream_id = new_id()
    position = store.append(Pending(stream_id, 1, ev.NotificationsRead(
        org_id=principal.org_id, at=now(), operator_id=principal.operator_id, notification_ids=ids, all=everything)))
    return Created(stream_id, position)


def set_preferences(store: EventStore, principal: Principal, preferences: dict[str, ev.ChannelChoice]) -> Created:
    """Stores the operator's whole choice (the route merges a partial one with the current)."""
    stream_id = new_id()
    position = store.append(Pending(stream_id, 1, ev.NotificationPreferencesSet(
        org_id=principal.org_id, at=now(), operator_id=principal.operator_id, preferences=preferences)))
    return Created(stream_id, position)
