"""The reports read model: the facts the per-operator, per-team and per-label reports add up
(`projections/views/breakdowns.py`). Built from the events like every read model, so a rebuild, or a
report that did not exist when the conversations happened, counts the whole past.

- `rm_report_conversations`: per conversation, its scope, when the visitor first wrote and the team's
  first response to it (and which operator gave it: null for the AI agent or an API key), whether it is
  resolved and since when it is open (its creation, or its latest reopening), and its assignee, team and
  labels as they are now (kept by the workflow's own handlers, `projections/workflow.py`).
- `rm_report_messages`: the team's replies the visitor sees (no internal notes, no campaign messages), with
  the operator who wrote each, and the VISITOR's latest rating of it. An operator's own rating
  (`/rating/operator`) is the team's judgement of its reply and never lands here.
- `rm_report_resolutions`: one row per resolve (a conversation resolved again after a reopening counts
  again), with how long it had been open and the operator it is credited to: its assignee then, else the
  operator who resolved it.

A run of messages is applied in one statement, as the inbox and the activity model do it.
"""

from __future__ import annotations

from events import types as ev
from projections.handlers import CONVERSATIONS_CREATED, Handler, ReadModel, as_json
from projections.workflow import handlers as workflow_handlers

TABLES = ("rm_report_conversations", "rm_report_messages", "rm_report_resolutions")

DDL = """
CREATE TABLE IF NOT EXISTS rm_report_conversations (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, created_at timestamptz NOT NULL,
    first_customer_at timestamptz, first_response_at timestamptz, first_responder_id uuid,
    resolved boolean NOT NULL DEFAULT false, opened_at timestamptz NOT NULL,
    assignee_id uuid, team_id uuid, labels uuid[] NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS rm_report_first_responses ON rm_report_conversations (org_id, first_response_at)
    WHERE first_response_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS rm_report_messages (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, conversation_id uuid NOT NULL,
    operator_id uuid, at timestamptz NOT NULL, rating text, rating_at timestamptz);
CREATE INDEX IF NOT EXISTS rm_report_replies ON rm_report_messages (org_id, at);
CREATE INDEX IF NOT EXISTS rm_report_ratings ON rm_report_messages (org_id, rating_at) WHERE rating_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS rm_report_resolutions (
    org_id uuid NOT NULL, website_id uuid NOT NULL, conversation_id uuid NOT NULL, at timestamptz NOT NULL,
    seconds double precision NOT NULL, operator_id uuid);
CREATE INDEX IF NOT EXISTS rm_report_resolved ON rm_report_resolutions (org_id, at);
"""

# The run's visible messages in order; the team's replies are kept; each conversation's first response is
# the team's first message after the visitor's first (one before it, in an earlier run or this one, is not).
MESSAGES = """
WITH m AS (
    SELECT * FROM ROWS FROM (json_to_recordset(%s::json) AS (message_id uuid, org_id uuid, website_id uuid,
        conversation_id uuid, sender text, internal boolean, operator_id uuid, campaign_id uuid, at timestamptz))
        WITH ORDINALITY AS m(message_id, org_id, website_id, conversation_id, sender, internal, operator_id,
                             campaign_id, at, n)
    WHERE NOT internal),
replies AS (
    INSERT INTO rm_report_messages (id, org_id, website_id, conversation_id, operator_id, at)
    SELECT message_id, org_id, website_id, conversation_id, operator_id, at FROM m
    WHERE sender = 'operator' AND campaign_id IS NULL ON CONFLICT DO NOTHING),
visitor_first AS (
    SELECT conversation_id, min(n) AS n, min(at) AS at FROM m WHERE sender = 'customer' GROUP BY conversation_id),
waiting AS (
    SELECT c.id, c.first_customer_at FROM rm_report_conversations c
    WHERE c.id IN (SELECT conversation_id FROM m) AND c.first_response_at IS NULL),
answer AS (
    SELECT DISTINCT ON (m.conversation_id) m.conversation_id, m.at, m.operator_id
    FROM m JOIN waiting w ON w.id = m.conversation_id LEFT JOIN visitor_first v USING (conversation_id)
    WHERE m.sender = 'operator' AND (w.first_customer_at IS NOT NULL OR m.n > v.n)
    ORDER BY m.conversation_id, m.n)
UPDATE rm_report_conversations AS c SET
    first_customer_at = COALESCE(c.first_customer_at, v.at),
    first_response_at = COALESCE(c.first_response_at, a.at),
    first_responder_id = CASE WHEN c.first_response_at IS NULL THEN a.operator_id ELSE c.first_responder_id END
FROM visitor_first v FULL JOIN answer a USING (conversation_id)
WHERE c.id = COALESCE(v.conversation_id, a.conversation_id)
"""


async def _conversations(conn, events: list[ev.ConversationCreated]) -> None:
    await conn.execute(
        "INSERT INTO rm_report_conversations (id, org_id, website_id, created_at, opened_at) "
        f"SELECT conversation_id, org_id, website_id, at, at FROM {CONVERSATIONS_CREATED} ORDER BY n "
        "ON CONFLICT DO NOTHING", (as_json(events),))


async def _conversation_updated(conn, e: ev.ConversationUpdated) -> None:
    """A resolve of an open conversation is a resolution, credited to its assignee, else to who resolved it;
    a reopening starts the clock again."""
    if e.resolved is None:
        return
    resolver = e.actor.id if e.actor is not None and e.actor.kind == "operator" else None
    await conn.execute(
        "WITH changed AS (UPDATE rm_report_conversations SET resolved = %(resolved)s, "
        "opened_at = CASE WHEN %(resolved)s THEN opened_at ELSE %(at)s END "
        "WHERE id = %(id)s AND resolved <> %(resolved)s RETURNING org_id, website_id, opened_at, assignee_id) "
        "INSERT INTO rm_report_resolutions (org_id, website_id, conversation_id, at, seconds, operator_id) "
        "SELECT org_id, website_id, %(id)s, %(at)s, extract(epoch FROM %(at)s - opened_at), "
        "COALESCE(assignee_id, %(resolver)s) "
        "FROM changed WHERE %(resolved)s",
        {"id": e.conversation_id, "resolved": e.resolved, "at": e.at, "resolver": resolver})


async def _rated(conn, e: ev.MessageRated) -> None:
    if e.sender == "customer":
        await conn.execute("UPDATE rm_report_messages SET rating = %s, rating_at = %s WHERE id = %s",
                           (e.rating, e.at, e.message_id))


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    await conn.execute(MESSAGES, (as_json(events),))


WORKFLOW = workflow_handlers("rm_report_conversations")
HANDLERS: dict[type, Handler] = {
    ev.ConversationUpdated: _conversation_updated,
    ev.MessageRated: _rated,
    **{kind: WORKFLOW[kind] for kind in (ev.ConversationAssigned, ev.ConversationLabelsChanged, ev.TeamDeleted,
                                         ev.LabelDeleted)},
}


class ReportsProjection(ReadModel):
    name, ddl, tables = "reports", DDL, TABLES
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _messages, ev.ConversationCreated: _conversations}
    handles = (*HANDLERS, *run_handlers)
