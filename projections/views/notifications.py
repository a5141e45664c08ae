"""The notification centre's queries (`projections/notifications.py` builds its tables) and each operator's
preferences per kind and channel, which every channel reads: the dashboard (`GET
/api/operators/me/notifications`), desktop notifications (the dashboard decides with them) and e-mail
(`email_recipients`, for the mailer)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Iterable

import msgspec
import psycopg

from commands.errors import Invalid
from events.types import NOTIFICATION_KINDS, ChannelChoice

PAGE_DEFAULT = 50
PAGE_MAX = 200
# What an operator who never chose gets: everything in the dashboard and on the desktop; by e-mail what needs
# them personally (a mention, an assignment), a new conversation (the mailer sends it only while nobody of the
# website is online) and a disabled webhook endpoint.
DEFAULTS: dict[str, ChannelChoice] = {
    kind: ChannelChoice(dashboard=True, desktop=True,
                        email=kind in ("conversation.new", "mention", "assignment", "webhook.disabled"))
    for kind in NOTIFICATION_KINDS}


class Notification(msgspec.Struct, rename={"id": "_id", "created_at": "createdAt",
                                            "conversation_id": "conversationId"}, omit_defaults=True):
    id: uuid.UUID
    kind: str
    created_at: datetime
    read: bool
    text: str
    conversation_id: uuid.UUID | None = None


class NotificationPage(msgspec.Struct, rename="camel"):
    items: list[Notification]
    next_cursor: str | None
    unread: int


class Unread(msgspec.Struct):
    unread: int


class Pushed(msgspec.Struct):
    """What a dashboard's realtime `notification.created` frame carries: the notification and the recipient's
    unread count with it."""

    notification: Notification
    unread: int


COLUMNS = "id, kind, created_at, read, text, conversation_id"


def preferences_of(stored: dict | None) -> dict[str, ChannelChoice]:
    """Every kind, each as stored or by default (a kind added later reads as its default)."""
    chosen = msgspec.convert(stored or {}, dict[str, ChannelChoice])
    return {kind: chosen.get(kind, DEFAULTS[kind]) for kind in NOTIFICATION_KINDS}


async def preferences(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                      operator_id: uuid.UUID) -> dict[str, ChannelChoice]:
    """The operator's channels for each kind of notification in the organization."""
    row = await (await conn.execute(
        "SELECT preferences FROM rm_notification_preferences WHERE org_id = %s AND operator_id = %s",
        (org_id, operator_id))).fetchone()
    return preferences_of(row[0] if row else None)


async def email_recipients(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_ids: Iterable[uuid.UUID],
                           kind: str) -> set[uuid.UUID]:
    """Which of these operators want `kind` by e-mail (their choice, else the default)."""
    ids = list(operator_ids)
    stored = dict(await (await conn.execute(
        "SELECT operator_id, preferences FROM rm_notification_preferences WHERE org_id = %s AND operator_id = ANY(%s)",
        (org_id, ids))).fetchall())
    return {operator_id for operator_id in ids if preferences_of(stored.get(operator_id))[kind].email}


def parse_cursor(cursor: str | None) -> tuple[int, uuid.UUID] | None:
    if not cursor:
        return None
    position, _, last = cursor.partition(":")
    try:
        return int(position), uuid.UUID(last)
    except ValueError:
        raise Invalid("the cursor is not valid; start again without one", "cursor") from None


async def notification_page(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID,
                            cursor: str | None, limit: int | None, unread_only: bool = False) -> NotificationPage:
    """The operator's notifications, newest first, a page at a time, with how many are unread in all."""
    size = min(max(limit or PAGE_DEFAULT, 1), PAGE_MAX)
    after = parse_cursor(cursor)
    where = ["org_id = %s", "operator_id = %s"]
    args: list = [org_id, operator_id]
    if after is not None:
        where.append("(position, id) < (%s, %s)")
        args += list(after)
    if unread_only:
        where.append("NOT read")
    rows = await (await conn.execute(
        f"SELECT {COLUMNS}, position FROM rm_notifications WHERE {' AND '.join(where)} "
        "ORDER BY position DESC, id DESC LIMIT %s", (*args, size + 1))).fetchall()
    more = len(rows) > size
    rows = rows[:size]
    return NotificationPage([Notification(*row[:6]) for row in rows],
                            f"{rows[-1][6]}:{rows[-1][0]}" if more else None,
                            await unread_count(conn, org_id, operator_id))


async def unread_count(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID) -> int:
    return (await (await conn.execute(
        "SELECT count(*) FROM rm_notifications WHERE org_id = %s AND operator_id = %s AND NOT read",
        (org_id, operator_id))).fetchone())[0]


async def own_notifications(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID,
                            ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these ids are the operator's notifications in the organization."""
    return {row[0] for row in await (await conn.execute(
        "SELECT id FROM rm_notifications WHERE org_id = %s AND operator_id = %s AND id = ANY(%s)",
        (org_id, operator_id, ids))).fetchall()}


async def made_at(conn: psycopg.AsyncConnection, org_id: uuid.UUID, position: int,
                  operator_ids: Iterable[uuid.UUID]) -> list[tuple[uuid.UUID, Pushed]]:
    """The notifications the event at `position` made for these operators, each with its recipient's unread
    count: what the realtime hub pushes to their dashboards."""
    rows = await (await conn.execute(
        f"SELECT operator_id, {COLUMNS}, (SELECT count(*) FROM rm_notifications u WHERE u.org_id = n.org_id "
        "AND u.operator_id = n.operator_id AND NOT u.read) FROM rm_notifications n "
        "WHERE org_id = %s AND position = %s AND operator_id = ANY(%s)",
        (org_id, position, list(operator_ids)))).fetchall()
    return [(row[0], Pushed(Notification(*row[1:7]), row[7])) for row in rows]
