"""The mail outbox, filled by one projection (docs/mail.md).

Applying the stream in order, exactly once and with the position in the same transaction, this projection
records every e-mail that is due as one row of `mail_outbox`, keyed by (recipient, kind, source): the mail
worker (`delivery/mail.py`) claims and leases rows as the webhook dispatcher does its deliveries, and
records a row sent in that same row, so a mail is recorded before anyone sends it and sent once.

- Operators (`operator:<id>`) get one `digest` per digest window (PARLEY_NOTIFY_DIGEST_SECONDS; the window
  is the source): every mention and assignment of an operator who is not online, and every visitor's message
  while nobody of the organization is online, is a row of `mail_digest_items`, and the window's mail, due at
  its end, lists them all.
- A visitor with an e-mail address (`customer:<id>`) gets the team's replies (`reply`), one mail per
  conversation and window (`<conversation>:<window>`), sent only if the visitor is not on the page then.
- An invitation's or a password reset's link (`address:<e-mail>`, kind `invitation` or `password-reset`,
  the link as source) is due at once.

The outbox and the items are the log: a rebuild drops only the unsubscriptions (`mail_optouts`, replayed),
and the replay finds its rows there already. Events older than a day are never mailed, so a rebuild, or a
projection that comes back after a long stop, does not mail the past.

The projection reads the core read model (it runs after it, in the same group and transaction): the
organization's operators and their addresses, the conversation's customer and address.
"""

from __future__ import annotations

from datetime import datetime

import psycopg

from events import types as ev
from events.store import Recorded
from projections.inbox import mentioned_emails
from projections.views.availability import EFFECTIVE

WAKE_CHANNEL = "parley_mail"  # notified when mail becomes due now, so the worker starts at once
MAILED_WITHIN = "interval '1 day'"  # an event older than this is never mailed (a rebuild, a long stop)
LOG_DDL = ("mail_digest_items_recipient", """
CREATE TABLE IF NOT EXISTS mail_outbox (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid,
    recipient text NOT NULL,  -- operator:<id>, customer:<id>, address:<e-mail>
    kind text NOT NULL,       -- digest, reply, invitation, password-reset
    source text NOT NULL,     -- the window (digest), conversation:window (reply), the link's id
    conversation_id uuid, payload text,  -- a link's sealed URL
    status text NOT NULL DEFAULT 'pending',  -- pending, sending, sent, skipped, failed, uncertain
    due_at timestamptz NOT NULL, attempts integer NOT NULL DEFAULT 0, error text,
    created_at timestamptz NOT NULL, sent_at timestamptz,
    UNIQUE (recipient, kind, source));
CREATE INDEX IF NOT EXISTS mail_outbox_due ON mail_outbox (due_at) WHERE status IN ('pending', 'sending');
CREATE TABLE IF NOT EXISTS mail_digest_items (
    recipient text NOT NULL, source text NOT NULL, position bigint NOT NULL, kind text NOT NULL,
    conversation_id uuid NOT NULL, website_id uuid NOT NULL, at timestamptz NOT NULL,
    PRIMARY KEY (recipient, source, position, kind));
CREATE INDEX IF NOT EXISTS mail_digest_items_recipient ON mail_digest_items (recipient, source);
""")
OPTOUTS_DDL = ("mail_optouts", """
CREATE TABLE IF NOT EXISTS mail_optouts (recipient text NOT NULL, kind text NOT NULL, PRIMARY KEY (recipient, kind));
""")

# One statement per notified event: the recipients, their items, their window's outbox row (once). An
# operator online now (projections/views/availability.py) sees it at the dashboard: no mail for them.
DIGEST = """
WITH recipients AS (SELECT 'operator:' || m.operator_id AS recipient FROM rm_operator_orgs m {join}
                    WHERE m.org_id = %(org)s AND m.status = 'active' {where}
                    AND %(at)s > now() - """ + MAILED_WITHIN + """),
items AS (INSERT INTO mail_digest_items (recipient, source, position, kind, conversation_id, website_id, at)
          SELECT recipient, %(source)s, %(position)s, %(kind)s, %(conversation)s, {website}, %(at)s FROM recipients
          ON CONFLICT DO NOTHING)
INSERT INTO mail_outbox (id, org_id, website_id, recipient, kind, source, due_at, created_at)
SELECT gen_random_uuid(), %(org)s, {website}, recipient, 'digest', %(source)s, %(due)s, %(at)s FROM recipients
ON CONFLICT (recipient, kind, source) DO NOTHING
"""
NOT_ONLINE = f"AND {EFFECTIVE} <> 'online'"
MENTIONED = DIGEST.format(join="JOIN rm_operators o ON o.id = m.operator_id", website="%(website)s",
                          where="AND lower(o.email) = ANY(%(emails)s) AND m.operator_id IS DISTINCT FROM %(author)s "
                                + NOT_ONLINE)
# a visitor's message while nobody of the organization is online: everyone is told
TEAM_OFFLINE = DIGEST.format(join="", website="%(website)s", where=f"""AND NOT EXISTS (
    SELECT 1 FROM rm_operator_orgs m WHERE m.org_id = %(org)s AND {EFFECTIVE} = 'online')""")
ASSIGNED = DIGEST.format(join="", website="(SELECT website_id FROM rm_conversations WHERE id = %(conversation)s)",
                         where="AND m.operator_id = %(assignee)s AND %(assignee)s IS DISTINCT FROM %(actor)s "
                               "AND EXISTS (SELECT 1 FROM rm_conversations WHERE id = %(conversation)s) " + NOT_ONLINE)
REPLY = """
INSERT INTO mail_outbox (id, org_id, website_id, recipient, kind, source, conversation_id, due_at, created_at)
SELECT gen_random_uuid(), c.org_id, c.website_id, 'customer:' || c.customer_id, 'reply', %(source)s, c.id,
       %(due)s, %(at)s
FROM rm_conversations c JOIN rm_customers u ON u.id = c.customer_id
WHERE c.id = %(conversation)s AND NOT c.operator_only AND COALESCE(u.email, u.unverified_email) IS NOT NULL
  AND %(at)s > now() - """ + MAILED_WITHIN + """
ON CONFLICT (recipient, kind, source) DO NOTHING
"""
LINK = """
INSERT INTO mail_outbox (id, org_id, recipient, kind, source, payload, due_at, created_at)
SELECT gen_random_uuid(), %s, %s, %s, %s, %s, now(), %s WHERE %s > now() - """ + MAILED_WITHIN + """
ON CONFLICT (recipient, kind, source) DO NOTHING
"""


def window(at: datetime, seconds: float) -> tuple[str, datetime]:
    """The digest window `at` falls in: its name (its start, in seconds since the epoch) and its end."""
    start = int(at.timestamp() // seconds * seconds)
    return str(start), datetime.fromtimestamp(start + seconds, at.tzinfo)


class MailProjection:
    name = "mail"

    def __init__(self, digest_seconds: float, enabled: bool = True):
        self.digest_seconds = digest_seconds
        self.enabled = enabled  # without PARLEY_SMTP_URL nothing is queued: no mail waits to leave all at once
        self.handles = ((ev.MessageCreated, ev.ConversationAssigned, ev.LinkMailRequested, ev.MailUnsubscribed)
                        if enabled else (ev.MailUnsubscribed,))

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        # DDL only for what is missing: the outbox is written by the worker at the same time (see webhooks)
        for last_index, ddl in (LOG_DDL, OPTOUTS_DDL):
            if (await (await conn.execute("SELECT to_regclass(%s)", (last_index,))).fetchone())[0] is None:
                await conn.execute(ddl)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute("DROP TABLE IF EXISTS mail_optouts")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, ev.MailUnsubscribed):
            await conn.execute("INSERT INTO mail_optouts (recipient, kind) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (e.recipient, e.kind))
        elif not self.enabled:
            return
        elif isinstance(e, ev.MessageCreated):
            await self._message(conn, recorded.position, e)
        elif isinstance(e, ev.ConversationAssigned) and e.assignee_id is not None:
            await conn.execute(ASSIGNED, {**self._about(recorded.position, e), "kind": "assignment",
                                          "assignee": e.assignee_id, "actor": e.actor.id if e.actor else None})
        elif isinstance(e, ev.LinkMailRequested):
            await conn.execute(LINK, (e.org_id, f"address:{e.email}", e.kind, str(e.link_id), e.url, e.at, e.at))
            await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))

    def _about(self, position: int, e: ev.MessageCreated | ev.ConversationAssigned) -> dict:
        """What a digest item of the event is: where, when, and the window it falls in."""
        source, due = window(e.at, self.digest_seconds)
        return {"org": e.org_id, "at": e.at, "source": source, "due": due, "position": position,
                "conversation": e.conversation_id, "website": getattr(e, "website_id", None)}

    async def _message(self, conn: psycopg.AsyncConnection, position: int, e: ev.MessageCreated) -> None:
        about = self._about(position, e)
        source = about["source"]
        if e.internal:
            if emails := mentioned_emails(e.content):
                await conn.execute(MENTIONED, {**about, "kind": "mention", "emails": emails, "author": e.operator_id})
        elif e.sender == "customer":
            await conn.execute(TEAM_OFFLINE, {**about, "kind": "conversation.new"})
        elif e.campaign_id is None:  # a campaign's message is no reply: it would mail its whole audience
            await conn.execute(REPLY, {**about, "source": f"{e.conversation_id}:{source}"})
