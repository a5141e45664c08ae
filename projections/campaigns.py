"""The campaigns read model: one row per campaign (what the API lists and what the sender looks for), and
the conversations campaigns opened, which count the recipients who replied.

`rm_campaigns` is read by `projections.views.campaigns` (the REST routes and the MCP server's tools); its columns
are documented in docs/campaigns.md.
"""

from __future__ import annotations

import msgspec
from psycopg.types.json import Jsonb

from events import types as ev
from projections.handlers import Handler, ReadModel, as_json

WAKE_CHANNEL = "parley_campaigns"  # notified when a campaign may have sending to do, so the sender starts at once

DDL = """
CREATE TABLE IF NOT EXISTS rm_campaigns (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, name text NOT NULL, content text NOT NULL,
    audience jsonb NOT NULL, status text NOT NULL, scheduled_at timestamptz, created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL, started_at timestamptz, sent_at timestamptz,
    recipients integer NOT NULL DEFAULT 0, sent integer NOT NULL DEFAULT 0, replied integer NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS rm_campaigns_org ON rm_campaigns (org_id, id);
CREATE INDEX IF NOT EXISTS rm_campaigns_website ON rm_campaigns (org_id, website_id, id);
-- what the sender polls: campaigns that are due or sending
CREATE INDEX IF NOT EXISTS rm_campaigns_pending ON rm_campaigns (scheduled_at) WHERE status IN ('scheduled', 'sending');
CREATE TABLE IF NOT EXISTS rm_campaign_conversations (
    conversation_id uuid PRIMARY KEY, campaign_id uuid NOT NULL, replied boolean NOT NULL DEFAULT false);
"""


async def _wake(conn) -> None:
    await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))


async def _created(conn, e: ev.CampaignCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_campaigns (id, org_id, website_id, name, content, audience, status, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, 'draft', %s, %s) ON CONFLICT DO NOTHING",
        (e.campaign_id, e.org_id, e.website_id, e.name, e.content, Jsonb(msgspec.to_builtins(e.audience)), e.at,
         e.at))


async def _updated(conn, e: ev.CampaignUpdated) -> None:
    await conn.execute("UPDATE rm_campaigns SET name = %s, content = %s, audience = %s, updated_at = %s WHERE id = %s",
                       (e.name, e.content, Jsonb(msgspec.to_builtins(e.audience)), e.at, e.campaign_id))


async def _deleted(conn, e: ev.CampaignDeleted) -> None:
    await conn.execute("DELETE FROM rm_campaigns WHERE id = %s", (e.campaign_id,))


async def _scheduled(conn, e: ev.CampaignScheduled) -> None:
    await conn.execute("UPDATE rm_campaigns SET status = 'scheduled', scheduled_at = %s, updated_at = %s WHERE id = %s",
                       (e.scheduled_at, e.at, e.campaign_id))
    await _wake(conn)


async def _started(conn, e: ev.CampaignStarted) -> None:
    await conn.execute("UPDATE rm_campaigns SET status = 'sending', started_at = %s, updated_at = %s WHERE id = %s",
                       (e.at, e.at, e.campaign_id))
    await _wake(conn)


async def _recipients(conn, e: ev.CampaignRecipients) -> None:
    await conn.execute("UPDATE rm_campaigns SET recipients = %s WHERE id = %s", (e.total, e.campaign_id))


async def _batch_sent(conn, e: ev.CampaignBatchSent) -> None:
    await conn.execute("UPDATE rm_campaigns SET sent = GREATEST(sent, %s) WHERE id = %s",
                       (e.first + e.count, e.campaign_id))


async def _completed(conn, e: ev.CampaignCompleted) -> None:
    await conn.execute("UPDATE rm_campaigns SET status = 'sent', sent = %s, sent_at = %s, updated_at = %s WHERE id = %s",
                       (e.sent, e.at, e.at, e.campaign_id))


async def _cancelled(conn, e: ev.CampaignCancelled) -> None:
    await conn.execute("UPDATE rm_campaigns SET status = 'cancelled', updated_at = %s WHERE id = %s",
                       (e.at, e.campaign_id))
    await _wake(conn)


class _Sent(msgspec.Struct):
    conversation_id: str
    campaign_id: str


class _Reply(msgspec.Struct):
    conversation_id: str


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    """A run of messages: the campaigns' own open their conversations here; a visitor's message in such a
    conversation makes its recipient one who replied (once). Most runs have neither kind to write."""
    sent = [_Sent(str(e.conversation_id), str(e.campaign_id)) for e in events if e.campaign_id is not None]
    replies = [_Reply(str(e.conversation_id)) for e in events if e.sender == "customer" and not e.internal]
    if sent:
        await conn.execute(
            "INSERT INTO rm_campaign_conversations (conversation_id, campaign_id) "
            "SELECT conversation_id, campaign_id FROM json_to_recordset(%s::json) AS m(conversation_id uuid, "
            "campaign_id uuid) ON CONFLICT DO NOTHING", (as_json(sent),))
    if replies:
        await conn.execute(
            "WITH replied AS (UPDATE rm_campaign_conversations c SET replied = true "
            "FROM (SELECT DISTINCT conversation_id FROM json_to_recordset(%s::json) AS m(conversation_id uuid)) m "
            "WHERE c.conversation_id = m.conversation_id AND NOT c.replied RETURNING c.campaign_id) "
            "UPDATE rm_campaigns SET replied = replied + r.n "
            "FROM (SELECT campaign_id, count(*) AS n FROM replied GROUP BY campaign_id) r WHERE id = r.campaign_id",
            (as_json(replies),))


HANDLERS: dict[type, Handler] = {
    ev.CampaignCreated: _created,
    ev.CampaignUpdated: _updated,
    ev.CampaignDeleted: _deleted,
    ev.CampaignScheduled: _scheduled,
    ev.CampaignStarted: _started,
    ev.CampaignRecipients: _recipients,
    ev.CampaignBatchSent: _batch_sent,
    ev.CampaignCompleted: _completed,
    ev.CampaignCancelled: _cancelled,
}


class CampaignsProjection(ReadModel):
    name, ddl, tables = "campaigns", DDL, ("rm_campaigns", "rm_campaign_conversations")
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _messages}
    handles = (*HANDLERS, ev.MessageCreated)
