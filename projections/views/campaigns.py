"""Reading campaigns: one campaign, the list (paged like documents), the preview of an audience, and the audience
itself as the sender resolves it. Every function takes the organization explicitly, so the REST routes
and the MCP server read campaigns the same way (see docs/campaigns.md).

The audience is a filter over the website's customers (`rm_customers`), every given filter holding:
- `language`: the customer's language is one listed, ignoring case and `_`/`-`, or its primary subtag is
  (`en` takes `en-GB`);
- `emailDomain`: the part of the customer's e-mail address after the `@` is one listed, ignoring case
  (exactly: `example.com` does not take `mail.example.com`);
- `identified`: the customer has (true) or has not (false) a `userId`;
- `seenWithinDays`: within that many days the customer was created, started a chat session or wrote a
  message;
- `hasConversation`: the customer has (true) or has not (false) a conversation, of any kind.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, Mapping

import msgspec
import psycopg

from commands.campaigns import STATUSES
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from commands.streams import now
from events import types as ev
from projections.richtext import render_markdown
from projections.views.collections import CUSTOMERS, Collection, Customer, filter_clauses, parse_fields
from projections.views.cursors import CursorPage, cursor_page, offset_page

SAMPLE_SIZE = 10


class CampaignStats(msgspec.Struct):
    recipients: int  # 0 until the send resolves the audience
    sent: int
    replied: int  # recipients who wrote in the campaign's conversation


class Campaign(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "scheduled_at": "scheduledAt",
                                       "created_at": "createdAt", "sent_at": "sentAt",
                                       "content_html": "contentHtml"}):
    id: uuid.UUID
    website_id: uuid.UUID
    name: str
    content: str
    audience: ev.Audience
    status: str
    scheduled_at: datetime | None
    created_at: datetime
    sent_at: datetime | None
    stats: CampaignStats
    # the sanitized rendering of `content` (projections.richtext), computed on read: never stored
    content_html: str = ""

    def __post_init__(self) -> None:
        self.content_html = render_markdown(self.content)


class CampaignCollection(Collection):
    def row_object(self, row: tuple) -> Campaign:
        *fields, audience, status, scheduled_at, created_at, sent_at, recipients, sent, replied = row
        return Campaign(*fields, msgspec.convert(audience, ev.Audience), status, scheduled_at, created_at, sent_at,
                        CampaignStats(recipients, sent, replied))


CAMPAIGNS = CampaignCollection(
    name="campaigns", table="rm_campaigns", shape=Campaign,
    select="id, website_id, name, content, audience, status, scheduled_at, created_at, sent_at, recipients, sent, "
           "replied",
    filters={"websiteId": ("website_id", "uuid"), "status": ("status", "str")},
    sorts={"_id": "id"}, default_sort="_id",
)


class Preview(msgspec.Struct):
    recipients: int  # the audience's exact size now
    sample: list[Customer]  # its first recipients, at most SAMPLE_SIZE


def _org(org_id: uuid.UUID) -> Principal:
    """Campaigns belong to the organization, never to a pinned website: an operator's view of it."""
    return Principal("operator", org_id, org_id)


async def read_campaign(conn: psycopg.AsyncConnection, org_id: uuid.UUID, campaign_id: uuid.UUID | None) -> Campaign:
    """The organization's campaign; a missing, deleted or foreign one raises NotFound (404)."""
    row = await (await conn.execute(
        f"SELECT {CAMPAIGNS.select} FROM rm_campaigns WHERE org_id = %s AND id = %s", (org_id, campaign_id))
    ).fetchone() if campaign_id else None
    if row is None:
        raise NotFound("campaign not found")
    return CAMPAIGNS.row_object(row)


async def list_campaigns(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                         params: Mapping[str, str]) -> list[Any] | CursorPage:
    """GET /api/campaigns, paged like the documents list, by ascending `_id`: an array (`limit`, 0 by
    default: all; `skip`), or with `pagination=cursor` `{items, nextCursor}` pages (`limit` default 100,
    capped at 500; `cursor`); filters `websiteId`, `status`; `fields`."""
    pagination = params.get("pagination")
    if pagination not in (None, "", "cursor"):
        raise Invalid("pagination accepts only the value cursor", "pagination")
    if params.get("status") and params["status"] not in STATUSES:
        raise Invalid(f"status must be one of {', '.join(STATUSES)}", "status")
    fields = parse_fields(params, Campaign)
    where, args = ["org_id = %s"], [org_id]
    clauses, values = filter_clauses(CAMPAIGNS, params)
    if pagination != "cursor":
        return await offset_page(conn, CAMPAIGNS, where + clauses, args + values, params, fields)
    return await cursor_page(conn, CAMPAIGNS, where + clauses, args + values, params, fields)


def audience_clauses(org_id: uuid.UUID, website_id: uuid.UUID, audience: ev.Audience,
                     at: datetime) -> tuple[list[str], list[Any]]:
    """The WHERE clauses over `rm_customers c` that pick the audience as of `at` (the module's doc says
    what each filter means)."""
    where = ["c.org_id = %s", "c.website_id = %s"]
    args: list[Any] = [org_id, website_id]
    if audience.language is not None:
        where.append("(replace(lower(c.language), '_', '-') = ANY(%s) "
                     "OR split_part(replace(lower(c.language), '_', '-'), '-', 1) = ANY(%s))")
        args += [list(audience.language)] * 2
    if audience.email_domain is not None:
        where.append("lower(substring(c.email from '@([^@]*)$')) = ANY(%s)")
        args.append(list(audience.email_domain))
    if audience.identified is not None:
        where.append("(c.user_id IS NOT NULL) = %s")
        args.append(audience.identified)
    if audience.has_conversation is not None:
        where.append("EXISTS (SELECT 1 FROM rm_conversations v WHERE v.org_id = c.org_id AND v.customer_id = c.id) = %s")
        args.append(audience.has_conversation)
    if audience.seen_within_days is not None:
        since = at - timedelta(days=audience.seen_within_days)
        where.append(
            "(c.created_at >= %s"
            " OR EXISTS (SELECT 1 FROM rm_chat_sessions s WHERE s.customer_id = c.id AND s.created_at >= %s)"
            " OR EXISTS (SELECT 1 FROM rm_conversations v JOIN rm_messages m"
            "            ON m.org_id = v.org_id AND m.conversation_id = v.id"
            "            WHERE v.org_id = c.org_id AND v.customer_id = c.id AND m.sender = 'customer'"
            "              AND NOT m.internal AND m.creation_time >= %s))")
        args += [since] * 3
    return where, args


async def audience_of(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID,
                      audience: ev.Audience) -> list[uuid.UUID]:
    """The recipients now, in the order a send goes to them (the customers' creation order)."""
    where, args = audience_clauses(org_id, website_id, audience, now())
    rows = await (await conn.execute(f"SELECT c.id FROM rm_customers c WHERE {' AND '.join(where)} ORDER BY c.id",
                                     args)).fetchall()
    return [row[0] for row in rows]


async def _count(conn: psycopg.AsyncConnection, condition: str, args: list[Any]) -> int:
    return (await (await conn.execute(f"SELECT count(*) FROM rm_customers c WHERE {condition}", args)).fetchone())[0]


async def audience_size(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID,
                        audience: ev.Audience) -> int:
    """How many customers the audience holds now."""
    where, args = audience_clauses(org_id, website_id, audience, now())
    return await _count(conn, " AND ".join(where), args)


async def preview_campaign(conn: psycopg.AsyncConnection, org_id: uuid.UUID, campaign_id: uuid.UUID | None) -> Preview:
    """The audience's size now and its first recipients; reads only (run it in one snapshot, so that the
    size and the sample agree)."""
    campaign = await read_campaign(conn, org_id, campaign_id)
    where, args = audience_clauses(org_id, campaign.website_id, campaign.audience, now())
    condition = " AND ".join(where)
    count = await _count(conn, condition, args)
    rows = await (await conn.execute(
        f"SELECT {CUSTOMERS.select} FROM rm_customers c WHERE {condition} ORDER BY c.id LIMIT {SAMPLE_SIZE}",
        args)).fetchall()
    return Preview(count, [CUSTOMERS.row_object(row) for row in rows])  # type: ignore[misc]


# the campaigns the sender has work for, oldest due first (delivery/campaigns.py)
PENDING = ("SELECT id, org_id, status, scheduled_at FROM rm_campaigns WHERE status IN ('scheduled', 'sending') "
           "ORDER BY scheduled_at NULLS FIRST, id")
