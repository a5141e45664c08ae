"""The mail outbox as the mail worker works it (the table is filled by projections/mail.py), and what a
mail shows: the website, the recipient, a digest's items, a visitor's transcript. The statements live
here, with the tables' owner; delivery/mail.py runs them.

A row is claimed with a lease (its due time moves past the longest a send can take, its attempts count
up: the claim's token). Before the end of a message's data is sent, the row is marked `sending` under that
token, so a worker that lost its claim sends nothing; once the SMTP server accepts it, `sent`. A row still
`sending` when its lease is over was perhaps delivered, perhaps not: it becomes `uncertain`, never sent
again (docs/mail.md)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import psycopg

CLAIM = """
WITH due AS (
    SELECT id FROM mail_outbox WHERE status = 'pending' AND due_at <= now()
    ORDER BY due_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE mail_outbox o SET due_at = now() + %(lease)s * interval '1 second', attempts = o.attempts + 1
    FROM due WHERE o.id = due.id
    RETURNING o.id, o.org_id, o.website_id, o.recipient, o.kind, o.source, o.conversation_id, o.payload, o.attempts
), next AS (
    SELECT EXTRACT(EPOCH FROM min(due_at) - now())::float8 AS wait FROM mail_outbox
    WHERE status = 'pending' AND due_at > now()
)
SELECT next.wait, claimed.* FROM next LEFT JOIN claimed ON true
"""
# Under the claim's token only: a row another worker claimed since is not this one's to send. The rows the
# server took since the previous mark are marked sent in the same statement, so at most the message in flight
# and the one before it are `sending` at any time.
SENDING = """
WITH taken AS (UPDATE mail_outbox SET status = 'sent', sent_at = now(), error = NULL
               WHERE id = ANY(%(sent)s::uuid[]) AND status = 'sending')
UPDATE mail_outbox SET status = 'sending', due_at = now() + %(lease)s * interval '1 second'
WHERE id = %(id)s AND status = 'pending' AND attempts = %(attempts)s RETURNING 1"""
SENT = "UPDATE mail_outbox SET status = 'sent', sent_at = now(), error = NULL WHERE id = ANY(%s) AND status = 'sending'"
RETRY = """UPDATE mail_outbox SET status = 'pending', due_at = now() + %s * interval '1 second', error = %s
WHERE id = %s AND attempts = %s AND status IN ('pending', 'sending')"""
ENDED = "UPDATE mail_outbox SET status = %s, error = %s WHERE id = %s AND attempts = %s AND status IN ('pending', 'sending')"
UNCERTAIN = """UPDATE mail_outbox SET status = 'uncertain',
    error = 'the worker stopped between sending the message and hearing the SMTP server accept it'
WHERE status = 'sending' AND due_at < now() RETURNING id"""


@dataclass(frozen=True)
class Claimed:
    id: uuid.UUID
    org_id: uuid.UUID
    website_id: uuid.UUID | None
    recipient: str  # operator:<id>, customer:<id>, address:<e-mail>
    kind: str
    source: str
    conversation_id: uuid.UUID | None
    payload: str | None
    attempts: int  # the claim's token


async def claim(conn: psycopg.AsyncConnection, limit: int, lease: float) -> tuple[list[Claimed], float | None]:
    """Claims due rows; also the seconds until the next pending row not due yet (None: none)."""
    rows = await (await conn.execute(CLAIM, {"limit": limit, "lease": lease})).fetchall()
    return [Claimed(*row[1:]) for row in rows if row[1] is not None], rows[0][0]


@dataclass(frozen=True)
class Website:
    name: str
    brand_color: str | None


@dataclass(frozen=True)
class Person:
    email: str | None
    name: str | None


@dataclass(frozen=True)
class DigestEntry:
    """A conversation's lines in an operator's digest: what happened there in the window."""

    conversation_id: uuid.UUID
    website: str
    kinds: list[str]
    messages: int  # the visitor's messages
    visitor: str | None
    last_visitor_text: str | None


@dataclass(frozen=True)
class Line:
    sender: str
    author: str | None
    content: str
    at: datetime


async def website(conn: psycopg.AsyncConnection, website_id: uuid.UUID | None) -> Website:
    row = await (await conn.execute("SELECT name, brand_color FROM rm_websites WHERE id = %s",
                                    (website_id,))).fetchone() if website_id else None
    return Website(*row) if row else Website("Parley", None)


async def operator(conn: psycopg.AsyncConnection, operator_id: uuid.UUID) -> Person:
    row = await (await conn.execute("SELECT email, display_name FROM rm_operators WHERE id = %s",
                                    (operator_id,))).fetchone()
    return Person(*row) if row else Person(None, None)


async def customer(conn: psycopg.AsyncConnection, customer_id: uuid.UUID) -> Person:
    row = await (await conn.execute("SELECT COALESCE(email, unverified_email), nickname FROM rm_customers "
                                    "WHERE id = %s", (customer_id,))).fetchone()
    return Person(*row) if row else Person(None, None)


async def organization_name(conn: psycopg.AsyncConnection, org_id: uuid.UUID) -> str:
    row = await (await conn.execute("SELECT name FROM rm_organizations WHERE id = %s", (org_id,))).fetchone()
    return row[0] if row else "Parley"


async def opted_out(conn: psycopg.AsyncConnection, recipient: str, kind: str) -> bool:
    return await (await conn.execute("SELECT EXISTS (SELECT 1 FROM mail_optouts WHERE recipient = %s AND kind = %s)",
                                     (recipient, kind))).fetchone() == (True,)


async def digest(conn: psycopg.AsyncConnection, recipient: str, source: str) -> list[DigestEntry]:
    """The window's items by conversation, without the kinds the recipient unsubscribed from; the visitor's
    latest message of each (never a note: an operator's mention says only where)."""
    rows = await (await conn.execute("""
        SELECT i.conversation_id, w.name, array_agg(DISTINCT i.kind ORDER BY i.kind),
               count(*) FILTER (WHERE i.kind = 'conversation.new'), COALESCE(u.nickname, u.email),
               (SELECT m.content FROM rm_messages m WHERE m.org_id = c.org_id AND m.conversation_id = c.id
                AND m.sender = 'customer' AND NOT m.internal AND NOT m.deleted ORDER BY m.creation_time DESC LIMIT 1)
        FROM mail_digest_items i JOIN rm_conversations c ON c.id = i.conversation_id
        JOIN rm_websites w ON w.id = i.website_id LEFT JOIN rm_customers u ON u.id = c.customer_id
        WHERE i.recipient = %s AND i.source = %s
          AND NOT EXISTS (SELECT 1 FROM mail_optouts o WHERE o.recipient = i.recipient AND o.kind = i.kind)
        GROUP BY i.conversation_id, w.name, u.nickname, u.email, c.org_id, c.id ORDER BY min(i.at)""",
                                     (recipient, source))).fetchall()
    return [DigestEntry(*row) for row in rows]


async def visitor_present(conn: psycopg.AsyncConnection, customer_id: uuid.UUID) -> bool:
    """Whether the visitor has the widget open now (the API processes' presence, delivery/realtime.py)."""
    if (await (await conn.execute("SELECT to_regclass('parley_presence')")).fetchone())[0] is None:
        return False
    return await (await conn.execute("SELECT EXISTS (SELECT 1 FROM parley_presence WHERE customer_id = %s)",
                                     (customer_id,))).fetchone() == (True,)


async def transcript(conn: psycopg.AsyncConnection, org_id: uuid.UUID, conversation_id: uuid.UUID,
                     limit: int = 50) -> list[Line]:
    """What the visitor has not seen: the conversation's messages since their last visit (their own last
    message, shown for context) or, if they never wrote, the latest ones. Never a note."""
    lines = await (await conn.execute("""
        SELECT sender, COALESCE(o.display_name, m.author), content, creation_time FROM (
            SELECT * FROM rm_messages m WHERE m.org_id = %(org)s AND m.conversation_id = %(c)s AND NOT m.internal
            AND NOT m.deleted
            AND m.creation_time >= COALESCE((SELECT max(creation_time) FROM rm_messages
                                             WHERE org_id = %(org)s AND conversation_id = %(c)s
                                             AND sender = 'customer' AND NOT internal), '-infinity')
            ORDER BY creation_time DESC, id DESC LIMIT %(limit)s) m
        LEFT JOIN rm_operators o ON o.id = m.operator_id ORDER BY creation_time, m.id""",
                                      {"org": org_id, "c": conversation_id, "limit": limit})).fetchall()
    return [Line(*line) for line in lines]
