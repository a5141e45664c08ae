"""Websites' business hours, and the away replies they call for.

`rm_website_hours` holds each website's latest `BusinessHoursSet`. A visitor's message (`MessageCreated`,
sender customer, not internal) on a website with an away message, at a time `open_state` says is closed,
queues one away reply for its conversation in `away_replies`, keyed by the conversation: a conversation
gets one at most, whatever replays or concurrent messages. `delivery/away.py` posts it as a message whose
id is derived from the conversation (`commands.hours.away_reply_id`), so the store itself refuses a second
one: exactly once, race-free, across kills and several workers.

The queue is a log like the webhooks' deliveries: a rebuild drops only the hours, and a replay finds each
conversation's row already there."""

from __future__ import annotations

import uuid

import msgspec
import psycopg

from events import types as ev
from events.store import Recorded
from projections.views.business_hours import BusinessHours, all_hours, open_state

WAKE_CHANNEL = "parley_away"

HOURS_DDL = """
CREATE TABLE IF NOT EXISTS rm_website_hours (
    website_id uuid PRIMARY KEY, org_id uuid NOT NULL, timezone text NOT NULL, weekly jsonb NOT NULL,
    holidays text[] NOT NULL, away_message text, updated_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS away_replies (
    conversation_id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, content text NOT NULL,
    position bigint NOT NULL, status text NOT NULL DEFAULT 'pending', created_at timestamptz NOT NULL,
    posted_at timestamptz);
CREATE INDEX IF NOT EXISTS away_replies_pending ON away_replies (created_at) WHERE status = 'pending';
"""


class HoursProjection:
    """Keeps every website's hours in memory for the per-message check (loaded when first needed, dropped
    whenever hours change and whenever its runner starts again)."""

    name = "hours"
    handles = (ev.BusinessHoursSet, ev.MessageCreated)

    def __init__(self) -> None:
        self.hours: dict[uuid.UUID, BusinessHours] | None = None

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        self.hours = None
        await conn.execute(HOURS_DDL)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        self.hours = None
        await conn.execute("DROP TABLE IF EXISTS rm_website_hours")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, ev.BusinessHoursSet):
            self.hours = None
            await conn.execute(
                "INSERT INTO rm_website_hours (website_id, org_id, timezone, weekly, holidays, away_message, "
                "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (website_id) DO UPDATE SET "
                "timezone = EXCLUDED.timezone, weekly = EXCLUDED.weekly, holidays = EXCLUDED.holidays, "
                "away_message = EXCLUDED.away_message, updated_at = EXCLUDED.updated_at",
                (e.website_id, e.org_id, e.timezone, msgspec.json.encode(e.weekly).decode(), e.holidays,
                 e.away_message, e.at))
        elif isinstance(e, ev.MessageCreated) and e.sender == "customer" and not e.internal:
            hours = (await self._hours(conn)).get(e.website_id)
            if hours is None or not hours.away_message or open_state(hours, e.at).open:
                return
            await conn.execute(
                "INSERT INTO away_replies (conversation_id, org_id, website_id, content, position, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (e.conversation_id, e.org_id, e.website_id, hours.away_message, recorded.position, e.at))
            await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))

    async def _hours(self, conn: psycopg.AsyncConnection) -> dict[uuid.UUID, BusinessHours]:
        if self.hours is None:
            self.hours = await all_hours(conn)
        return self.hours
