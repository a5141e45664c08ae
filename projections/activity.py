"""The activity read model: what the MCP server's summaries say about conversations beyond the inbox's
flags, without reading a message.

- `rm_activity_conversations`: per conversation, its visible messages (internal notes left out), since
  when the visitor has been waiting for a reply (their earliest message after the team's latest; null
  once the team answered), and the first response (the team's first message after the visitor's first).
- `rm_activity_days`: per website and UTC day, conversations started, visitor messages and team replies.

A run of messages is applied in one statement, as the inbox does it.
"""

from __future__ import annotations

from events import types as ev
from projections.handlers import CONVERSATIONS_CREATED, Handler, ReadModel, as_json

TABLES = ("rm_activity_conversations", "rm_activity_days")

DDL = """
CREATE TABLE IF NOT EXISTS rm_activity_conversations (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, message_count integer NOT NULL DEFAULT 0,
    awaiting_since timestamptz, first_customer_at timestamptz, first_response_at timestamptz,
    first_response_seconds double precision);
CREATE INDEX IF NOT EXISTS rm_activity_waiting ON rm_activity_conversations (website_id, awaiting_since)
    WHERE awaiting_since IS NOT NULL;
CREATE INDEX IF NOT EXISTS rm_activity_responses ON rm_activity_conversations (website_id, first_response_at)
    INCLUDE (first_response_seconds) WHERE first_response_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS rm_activity_days (
    website_id uuid NOT NULL, day date NOT NULL, conversations integer NOT NULL DEFAULT 0,
    visitor_messages integer NOT NULL DEFAULT 0, replies integer NOT NULL DEFAULT 0, PRIMARY KEY (website_id, day));
"""

MESSAGES = """
WITH m AS (
    SELECT * FROM ROWS FROM (json_to_recordset(%s::json) AS (conversation_id uuid, website_id uuid, sender text,
        internal boolean, at timestamptz)) WITH ORDINALITY AS m(conversation_id, website_id, sender, internal, at, n)
    WHERE NOT internal),
firsts AS (
    SELECT conversation_id, min(n) FILTER (WHERE sender = 'customer') AS first_customer_n,
           max(n) FILTER (WHERE sender = 'operator') AS last_operator_n FROM m GROUP BY conversation_id),
run AS (
    SELECT m.conversation_id, count(*) AS messages,
           min(m.at) FILTER (WHERE m.sender = 'customer') AS first_customer,
           min(m.at) FILTER (WHERE m.sender = 'operator') AS first_operator,
           min(m.at) FILTER (WHERE m.sender = 'operator' AND m.n > f.first_customer_n) AS first_answer,
           min(m.at) FILTER (WHERE m.sender = 'customer' AND m.n > COALESCE(f.last_operator_n, 0)) AS waiting_from,
           bool_or(m.sender = 'operator') AS answered
    FROM m JOIN firsts f USING (conversation_id) GROUP BY m.conversation_id),
days AS (
    INSERT INTO rm_activity_days AS d (website_id, day, visitor_messages, replies)
    SELECT website_id, (at AT TIME ZONE 'UTC')::date, count(*) FILTER (WHERE sender = 'customer'),
           count(*) FILTER (WHERE sender = 'operator') FROM m GROUP BY 1, 2
    ON CONFLICT (website_id, day) DO UPDATE SET visitor_messages = d.visitor_messages + EXCLUDED.visitor_messages,
        replies = d.replies + EXCLUDED.replies)
UPDATE rm_activity_conversations AS c SET
    message_count = c.message_count + run.messages,
    awaiting_since = CASE WHEN run.answered THEN run.waiting_from ELSE COALESCE(c.awaiting_since, run.waiting_from) END,
    first_customer_at = COALESCE(c.first_customer_at, run.first_customer),
    first_response_at = COALESCE(c.first_response_at,
        CASE WHEN c.first_customer_at IS NOT NULL THEN run.first_operator ELSE run.first_answer END),
    first_response_seconds = COALESCE(c.first_response_seconds, extract(epoch FROM
        CASE WHEN c.first_customer_at IS NOT NULL THEN run.first_operator - c.first_customer_at
             ELSE run.first_answer - run.first_customer END))
FROM run WHERE c.id = run.conversation_id
"""


async def _conversations(conn, events: list[ev.ConversationCreated]) -> None:
    """The run's conversations, and each day's count of those it started (a conversation applied again
    counts once)."""
    await conn.execute(
        f"WITH c AS (SELECT * FROM {CONVERSATIONS_CREATED}), "
        "inserted AS (INSERT INTO rm_activity_conversations (id, org_id, website_id) "
        "SELECT conversation_id, org_id, website_id FROM c ORDER BY n ON CONFLICT DO NOTHING RETURNING id) "
        "INSERT INTO rm_activity_days AS d (website_id, day, conversations) "
        "SELECT c.website_id, (c.at AT TIME ZONE 'UTC')::date, count(*) FROM c JOIN inserted ON inserted.id = c.conversation_id "
        "GROUP BY 1, 2 ON CONFLICT (website_id, day) DO UPDATE SET conversations = d.conversations + EXCLUDED.conversations",
        (as_json(events),))


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    await conn.execute(MESSAGES, (as_json(events),))


class ActivityProjection(ReadModel):
    name, ddl, tables = "activity", DDL, TABLES
    handlers: dict[type, Handler] = {}
    run_handlers = {ev.MessageCreated: _messages, ev.ConversationCreated: _conversations}
    handles = tuple(run_handlers)
