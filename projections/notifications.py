"""The operators' notification centre: one row per recipient and source event, made from the facts.

| kind | made from | for |
|---|---|---|
| `conversation.new` | a visitor's `ConversationCreated` (not operator-only, not a campaign's) | every active operator |
| `message.new` | a visitor's `MessageCreated` | the conversation's assignee, else the operators who replied in it |
| `mention` | an internal note naming `@Display Name` or `@local-part` of an operator's e-mail | that operator |
| `assignment` | `ConversationAssigned` to an operator (not by that operator) | the new assignee |
| `handoff` | `ConversationUpdated(handoff=True)` (the AI agent, or its failed run, gave up) | the assignee, else everyone |
| `webhook.disabled` | `WebhookDisabled` by the delivery worker (not by a person) | admins and owners |

Exactly once per recipient and kind by construction: a row's id is derived from (recipient, the source
event's position, kind), and is its primary key, so a replay, a rebuild or a batch applied again after a
kill inserts nothing twice. The runner applies each event once in order with its position in the same
transaction anyway; the key makes that hold for whoever consumes the rows (the e-mail digests too).

Read state comes from `NotificationsRead` events, so a rebuild gives back what was read. An operator's
`dashboard` preference for a kind is checked when the row would be made: off, no row.

What a notification's text says is fixed here and never holds an internal note's words (a mention says who
mentioned you, not what they wrote); a visitor's message is quoted, shortened. Notifications are for
operators only; texts are plain text, rendered as text.

After a commit that made rows, `pg_notify(CHANNEL, 'created:<org>:<position>')` (and after a read,
`read:<org>:<operator>`) lets each API process's realtime hub push them to the recipients' open dashboards.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Iterable, Sequence

import msgspec
import psycopg

from events import types as ev
from events.store import Recorded
from projections.handlers import CONVERSATIONS_CREATED, as_json, runs

CHANNEL = "parley_notifications"
SNIPPET = 120  # characters of a visitor's message a `message.new` quotes

TABLES = ("rm_notifications", "rm_notification_preferences", "rm_notify_members", "rm_notify_people",
          "rm_notify_conversations", "rm_notify_websites", "rm_notify_webhooks")

DDL = """
CREATE TABLE IF NOT EXISTS rm_notifications (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, operator_id uuid NOT NULL, kind text NOT NULL,
    position bigint NOT NULL, created_at timestamptz NOT NULL, conversation_id uuid, text text NOT NULL,
    read boolean NOT NULL DEFAULT false);
CREATE INDEX IF NOT EXISTS rm_notifications_recipient ON rm_notifications (operator_id, org_id, position DESC);
CREATE INDEX IF NOT EXISTS rm_notifications_unread ON rm_notifications (operator_id, org_id) WHERE NOT read;
CREATE INDEX IF NOT EXISTS rm_notifications_source ON rm_notifications (org_id, position);
CREATE TABLE IF NOT EXISTS rm_notification_preferences (
    org_id uuid NOT NULL, operator_id uuid NOT NULL, preferences jsonb NOT NULL, PRIMARY KEY (org_id, operator_id));
CREATE TABLE IF NOT EXISTS rm_notify_members (
    org_id uuid NOT NULL, operator_id uuid NOT NULL, role text NOT NULL, active boolean NOT NULL,
    PRIMARY KEY (org_id, operator_id));
CREATE TABLE IF NOT EXISTS rm_notify_people (operator_id uuid PRIMARY KEY, email text NOT NULL, display_name text);
CREATE TABLE IF NOT EXISTS rm_notify_conversations (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, assignee uuid,
    repliers uuid[] NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS rm_notify_websites (id uuid PRIMARY KEY, name text NOT NULL);
CREATE TABLE IF NOT EXISTS rm_notify_webhooks (id uuid PRIMARY KEY, website_id uuid NOT NULL);
"""

# Makes the rows for the recipients the `recipients` query names (one column, operator_id): active members
# of the organization who did not cause it and whose `dashboard` preference for the kind is on (the
# default). The text is `before`, the website's name, `after`.
NOTIFY = """
WITH recipients (operator_id) AS ({recipients}),
made AS (
    INSERT INTO rm_notifications (id, org_id, operator_id, kind, position, created_at, conversation_id, text)
    SELECT md5(r.operator_id::text || ':' || %(position)s::text || ':' || %(kind)s)::uuid, %(org)s, r.operator_id,
           %(kind)s, %(position)s, %(at)s, %(conversation)s,
           %(before)s || COALESCE((SELECT name FROM rm_notify_websites WHERE id = %(website)s), 'a website')
           || %(after)s
    FROM (SELECT DISTINCT operator_id FROM recipients) AS r
    JOIN rm_notify_members m ON m.org_id = %(org)s AND m.operator_id = r.operator_id AND m.active
    LEFT JOIN rm_notification_preferences p ON p.org_id = %(org)s AND p.operator_id = r.operator_id
    WHERE r.operator_id IS DISTINCT FROM %(author)s
      AND COALESCE((p.preferences -> %(kind)s ->> 'dashboard')::boolean, true)
    ON CONFLICT (id) DO NOTHING RETURNING 1)
SELECT pg_notify(%(channel)s, 'created:' || %(org)s::text || ':' || %(position)s::text)
FROM (SELECT 1 FROM made LIMIT 1) AS any_made
"""
EVERYONE = "SELECT operator_id FROM rm_notify_members WHERE org_id = %(org)s"
ADMINS = "SELECT operator_id FROM rm_notify_members WHERE org_id = %(org)s AND role IN ('admin', 'owner')"
ASSIGNEE_OR_REPLIERS = """
SELECT unnest(CASE WHEN assignee IS NOT NULL THEN ARRAY[assignee] ELSE repliers END)
FROM rm_notify_conversations WHERE id = %(conversation)s"""
ASSIGNEE_OR_EVERYONE = """
SELECT assignee FROM rm_notify_conversations WHERE id = %(conversation)s AND assignee IS NOT NULL
UNION ALL
SELECT operator_id FROM rm_notify_members WHERE org_id = %(org)s
  AND NOT EXISTS (SELECT 1 FROM rm_notify_conversations WHERE id = %(conversation)s AND assignee IS NOT NULL)"""
NAMED = "SELECT unnest(%(named)s::uuid[])"
ENDS_LATER = re.compile(r"[\w@]")  # after a name: the mention goes on, so it is another name


@dataclass(frozen=True)
class Mentionable:
    operator_id: uuid.UUID
    display_name: str | None
    email: str


def mention_names(person: Mentionable) -> list[str]:
    """What `@` may be followed by to mention the operator: the display name, and the e-mail address's
    local part (and the whole address)."""
    local = person.email.split("@", 1)[0]
    return [name for name in (person.display_name, local, person.email) if name]


def mentioned(content: str, people: Iterable[Mentionable]) -> set[uuid.UUID]:
    """The operators a note mentions: `@` then one of their `mention_names`, matched case-insensitively, not
    inside a word or an address before it, nor followed by a letter, digit or `@` (so `@Ada` is not `@Adam`,
    and `@ada@b.example` is not ada@a.example). At each `@` the longest name that matches wins (`@Ada
    Lovelace` is Ada Lovelace, not another operator whose address starts with ada@); people sharing that
    name are all mentioned. The dashboard's composer suggests `@<e-mail>`, which the inbox's mentions tab
    also reads."""
    lowered = content.lower()
    handles = [(name.lower(), person.operator_id) for person in people for name in mention_names(person)]
    found: set[uuid.UUID] = set()
    for at in (m.start() for m in re.finditer(r"(?<![\w@.])@", content)):
        matches = [(len(name), operator_id) for name, operator_id in handles
                   if lowered.startswith(name, at + 1) and not ENDS_LATER.match(lowered, at + 1 + len(name))]
        if matches:
            longest = max(length for length, _ in matches)
            found.update(operator_id for length, operator_id in matches if length == longest)
    return found


def snippet(content: str) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= SNIPPET else flat[:SNIPPET - 1] + "…"


class NotificationsProjection:
    name = "notifications"
    handles = (ev.OperatorCreated, ev.OperatorOrgAdded, ev.OperatorOrgRemoved, ev.OperatorDisabled,
               ev.OperatorEnabled, ev.OperatorRoleChanged, ev.OperatorProfileChanged, ev.WebsiteCreated,
               ev.ConversationCreated, ev.ConversationUpdated, ev.MessageCreated, ev.WebhookSubscribed,
               ev.WebhookDisabled, ev.NotificationsRead, ev.NotificationPreferencesSet, ev.ConversationAssigned)

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(DDL)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES))

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        await self.apply_all(conn, [recorded])

    async def apply_all(self, conn: psycopg.AsyncConnection, batch: Sequence[Recorded]) -> None:
        """Event by event, but a run of new conversations (a campaign's batch) is recorded in one statement."""
        for kind, run in runs(batch):
            if kind is ev.ConversationCreated:
                await conn.execute(
                    "INSERT INTO rm_notify_conversations (id, org_id, website_id) SELECT conversation_id, org_id, "
                    f"website_id FROM {CONVERSATIONS_CREATED} ORDER BY n ON CONFLICT DO NOTHING",
                    (as_json([recorded.event for recorded in run]),))
            for recorded in run:
                await self._apply(conn, recorded)

    async def _apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, (ev.OperatorCreated, ev.OperatorOrgAdded, ev.OperatorOrgRemoved, ev.OperatorDisabled,
                          ev.OperatorEnabled, ev.OperatorRoleChanged, ev.OperatorProfileChanged)):
            await self._member(conn, e)
        elif isinstance(e, ev.WebsiteCreated):
            await conn.execute("INSERT INTO rm_notify_websites (id, name) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (e.website_id, e.name))
        elif isinstance(e, ev.WebhookSubscribed):
            await conn.execute("INSERT INTO rm_notify_webhooks (id, website_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (e.subscription_id, e.website_id))
        elif isinstance(e, ev.ConversationCreated):
            if not e.operator_only and (e.actor is None or e.actor.kind == "customer"):
                await notify(conn, recorded, "conversation.new", EVERYONE, "New conversation on {website}",
                             e.conversation_id, e.website_id)
        elif isinstance(e, ev.MessageCreated):
            await self._message(conn, recorded, e)
        elif isinstance(e, ev.ConversationAssigned):
            await self._assigned(conn, recorded, e)
        elif isinstance(e, ev.ConversationUpdated) and e.handoff:
            await notify(conn, recorded, "handoff", ASSIGNEE_OR_EVERYONE,
                         "The AI agent handed a conversation on {website} to the team", e.conversation_id,
                         await conversation_website(conn, e.conversation_id))
        elif isinstance(e, ev.WebhookDisabled) and e.origin is msgspec.UNSET:
            website = await (await conn.execute("SELECT website_id FROM rm_notify_webhooks WHERE id = %s",
                                                (e.subscription_id,))).fetchone()
            await notify(conn, recorded, "webhook.disabled", ADMINS,
                         "A webhook endpoint of {website} was disabled: " + e.reason, None,
                         website[0] if website else None)
        elif isinstance(e, ev.NotificationsRead):
            await self._read(conn, recorded, e)
        elif isinstance(e, ev.NotificationPreferencesSet):
            await conn.execute(
                "INSERT INTO rm_notification_preferences (org_id, operator_id, preferences) VALUES (%s, %s, %s) "
                "ON CONFLICT (org_id, operator_id) DO UPDATE SET preferences = EXCLUDED.preferences",
                (e.org_id, e.operator_id, msgspec.json.encode(e.preferences).decode()))

    async def _member(self, conn: psycopg.AsyncConnection, e: ev.Event) -> None:
        if isinstance(e, ev.OperatorCreated):
            await conn.execute(
                "INSERT INTO rm_notify_people (operator_id, email, display_name) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING", (e.operator_id, e.email, e.display_name))
        if isinstance(e, (ev.OperatorCreated, ev.OperatorOrgAdded)):
            await conn.execute(
                "INSERT INTO rm_notify_members (org_id, operator_id, role, active) VALUES (%s, %s, %s, true) "
                "ON CONFLICT (org_id, operator_id) DO UPDATE SET role = EXCLUDED.role, active = true",
                (e.org_id, e.operator_id, e.role))
        elif isinstance(e, (ev.OperatorOrgRemoved, ev.OperatorDisabled, ev.OperatorEnabled)):
            await conn.execute("UPDATE rm_notify_members SET active = %s WHERE org_id = %s AND operator_id = %s",
                               (isinstance(e, ev.OperatorEnabled), e.org_id, e.operator_id))
        elif isinstance(e, ev.OperatorRoleChanged):
            await conn.execute("UPDATE rm_notify_members SET role = %s WHERE org_id = %s AND operator_id = %s",
                               (e.role, e.org_id, e.operator_id))
        elif isinstance(e, ev.OperatorProfileChanged):
            await conn.execute("UPDATE rm_notify_people SET display_name = %s WHERE operator_id = %s",
                               (e.display_name, e.operator_id))

    async def _message(self, conn: psycopg.AsyncConnection, recorded: Recorded, e: ev.MessageCreated) -> None:
        if e.sender == "customer" and not e.internal:
            await notify(conn, recorded, "message.new", ASSIGNEE_OR_REPLIERS,
                         "New message on {website}: " + snippet(e.content), e.conversation_id, e.website_id)
        elif e.sender == "operator" and e.operator_id is not None and not e.internal:
            await conn.execute(
                "UPDATE rm_notify_conversations SET repliers = array_append(repliers, %s) "
                "WHERE id = %s AND NOT (%s = ANY(repliers))", (e.operator_id, e.conversation_id, e.operator_id))
        elif e.internal and "@" in e.content:
            people = [Mentionable(*row) for row in await (await conn.execute(
                "SELECT p.operator_id, p.display_name, p.email FROM rm_notify_members m "
                "JOIN rm_notify_people p USING (operator_id) WHERE m.org_id = %s AND m.active", (e.org_id,))).fetchall()]
            named = mentioned(e.content, people)
            if named:
                author = next((p.display_name or p.email for p in people if p.operator_id == e.operator_id), None)
                await notify(conn, recorded, "mention", NAMED,
                             f"{author or 'A teammate'} mentioned you in a note on {{website}}", e.conversation_id,
                             e.website_id, author=e.operator_id, named=sorted(named))

    async def _assigned(self, conn: psycopg.AsyncConnection, recorded: Recorded, e: ev.ConversationAssigned) -> None:
        """A new assignee is told, unless they took it themselves; a team-only assignment tells nobody (the
        team's members see it in their team's view)."""
        before = await (await conn.execute(
            "UPDATE rm_notify_conversations n SET assignee = %s FROM (SELECT assignee FROM rm_notify_conversations "
            "WHERE id = %s FOR UPDATE) AS old WHERE n.id = %s RETURNING old.assignee, n.website_id",
            (e.assignee_id, e.conversation_id, e.conversation_id))).fetchone()
        if e.assignee_id is None or before is None or before[0] == e.assignee_id:
            return
        by = e.actor.id if e.actor is not None and e.actor.kind == "operator" else None
        await notify(conn, recorded, "assignment", NAMED, "You were assigned a conversation on {website}",
                     e.conversation_id, before[1], author=by, named=[e.assignee_id])

    async def _read(self, conn: psycopg.AsyncConnection, recorded: Recorded, e: ev.NotificationsRead) -> None:
        if e.all:
            await conn.execute(
                "UPDATE rm_notifications SET read = true WHERE operator_id = %s AND org_id = %s AND NOT read "
                "AND position < %s", (e.operator_id, e.org_id, recorded.position))
        elif e.notification_ids:
            await conn.execute(
                "UPDATE rm_notifications SET read = true WHERE operator_id = %s AND org_id = %s AND id = ANY(%s)",
                (e.operator_id, e.org_id, e.notification_ids))
        await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"read:{e.org_id}:{e.operator_id}"))


async def conversation_website(conn: psycopg.AsyncConnection, conversation_id: uuid.UUID) -> uuid.UUID | None:
    row = await (await conn.execute("SELECT website_id FROM rm_notify_conversations WHERE id = %s",
                                    (conversation_id,))).fetchone()
    return row[0] if row else None


async def notify(conn: psycopg.AsyncConnection, recorded: Recorded, kind: str, recipients: str, text: str,
                 conversation_id: uuid.UUID | None, website_id: uuid.UUID | None, *,
                 author: uuid.UUID | None = None, named: list[uuid.UUID] | None = None) -> None:
    """Makes the `kind` notifications of this event for the operators `recipients` selects (one statement);
    `{website}` in `text` stands for the website's name."""
    before, _, after = text.partition("{website}")
    await conn.execute(NOTIFY.format(recipients=recipients), {
        "position": recorded.position, "kind": kind, "org": recorded.event.org_id, "at": recorded.event.at,
        "conversation": conversation_id, "before": before, "after": after, "website": website_id, "author": author,
        "named": named, "channel": CHANNEL})
