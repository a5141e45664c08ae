"""The AI agent's read model and its run queue, filled by one projection.

Applying the stream in order, exactly once and with the position in the same transaction, this
projection keeps each website's agent (its configuration, bearer secret and last outcome: what the
operators' status shows and what the worker calls), the actions the agent offered visitors with their
results, and the queue of runs. A visitor's message in a conversation the agent holds asks for a run:
if the conversation has a run waiting already, the message joins it (one run answers them together);
otherwise a new run is queued. A run is therefore recorded, durably, before anyone calls the agent, and
`delivery/agent.py` works the queue.

A rebuild drops the agents and actions, never the runs: they are the log, and a replay finds that a
message was asked about already (each run keeps the position of the last event that asked for it)."""

from __future__ import annotations

import uuid

import psycopg

from events import types as ev
from events.store import Recorded
from events.ids import new_id

WAKE_CHANNEL = "parley_agent"  # notified when a run becomes due, so the worker starts at once

MODEL_DDL = ("rm_agent_actions_conversation", """
CREATE TABLE IF NOT EXISTS rm_agents (
    website_id uuid PRIMARY KEY, org_id uuid NOT NULL, url text NOT NULL, enabled boolean NOT NULL,
    greeting text, fallback_message text, secret text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
    last_run_at timestamptz, last_outcome text, last_error_class text, last_error text, last_error_at timestamptz);
CREATE TABLE IF NOT EXISTS rm_agent_actions (
    customer_id uuid NOT NULL, tool_call_id text NOT NULL, conversation_id uuid NOT NULL, agent_run_id uuid NOT NULL,
    name text NOT NULL, arguments text NOT NULL, offered_at timestamptz NOT NULL, offered_position bigint NOT NULL,
    result text,
    result_position bigint, PRIMARY KEY (customer_id, tool_call_id));
CREATE INDEX IF NOT EXISTS rm_agent_actions_conversation ON rm_agent_actions (conversation_id, offered_position);
""")
RUNS_DDL = ("agent_runs_open", """
CREATE TABLE IF NOT EXISTS agent_runs (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, conversation_id uuid NOT NULL,
    customer_id uuid NOT NULL,
    kind text NOT NULL DEFAULT 'answer',  -- answer (calls the agent), or greeting (posts the website's greeting)
    reply_to uuid,  -- the latest visitor message it answers (none: a follow-up after an action's result)
    last_position bigint NOT NULL,  -- the position of the last event that asked for it
    status text NOT NULL,  -- pending, running, succeeded, failed, cancelled
    acted boolean NOT NULL DEFAULT false,  -- a message or an action of it is in the store: never run it again
    next_attempt_at timestamptz, attempts integer NOT NULL DEFAULT 0,
    error_class text, error text, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS agent_runs_waiting ON agent_runs (conversation_id, kind) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS agent_runs_conversation ON agent_runs (conversation_id, last_position);
CREATE INDEX IF NOT EXISTS agent_runs_open ON agent_runs (next_attempt_at) WHERE status IN ('pending', 'running');
""")

# A visitor's message (or an action's result) asks for a run in its conversation, unless the agent is
# paused there, the conversation is operator-only, or a run already covers this position (a replay):
# it joins the run that waits, or queues a new one.
ASK = """
WITH c AS (
    SELECT id, org_id, website_id, customer_id FROM rm_conversations
    WHERE id = %(conversation)s AND NOT operator_only AND NOT agent_paused
), seen AS (
    SELECT COALESCE(max(last_position), 0) AS position FROM agent_runs WHERE conversation_id = %(conversation)s
), joined AS (
    UPDATE agent_runs r SET reply_to = COALESCE(%(message)s, r.reply_to), last_position = %(position)s,
        updated_at = now()
    FROM c WHERE r.conversation_id = c.id AND r.status = 'pending' AND r.kind = 'answer'
      AND r.last_position < %(position)s
    RETURNING r.id
)
INSERT INTO agent_runs (id, org_id, website_id, conversation_id, customer_id, reply_to, last_position, status,
                        next_attempt_at, created_at, updated_at)
SELECT %(id)s, c.org_id, c.website_id, c.id, c.customer_id, %(message)s, %(position)s, 'pending', now(), now(), now()
FROM c, seen
WHERE seen.position < %(position)s AND NOT EXISTS (SELECT 1 FROM joined)
  AND NOT EXISTS (SELECT 1 FROM agent_runs w WHERE w.conversation_id = c.id AND w.status = 'pending'
                  AND w.kind = 'answer')
"""
# A visitor's new conversation on a website whose agent has a greeting: the greeting is its first message.
GREET = """
INSERT INTO agent_runs (id, org_id, website_id, conversation_id, customer_id, kind, last_position, status,
                        next_attempt_at, created_at, updated_at)
SELECT %(id)s, a.org_id, a.website_id, %(conversation)s, %(customer)s, 'greeting', %(position)s, 'pending', now(),
       now(), now()
FROM rm_agents a
WHERE a.website_id = %(website)s AND a.enabled AND a.greeting IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.conversation_id = %(conversation)s)
"""

AGENT_EVENTS = (ev.AgentConfigured, ev.AgentSecretSet, ev.AgentRemoved)


class AgentProjection:
    """Keeps the websites whose agent is enabled in memory, for the per-message decision: loaded when
    first needed, dropped whenever this projection applies an agent event (and whenever its runner
    starts again)."""

    name = "agent"
    handles = (ev.ConversationCreated, ev.MessageCreated, ev.ConversationUpdated, ev.AgentActionOffered, ev.AgentActionResult,
               ev.AgentRunEnded, *AGENT_EVENTS)

    def __init__(self) -> None:
        self.enabled: set[uuid.UUID] | None = None

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        self.enabled = None
        # as in the webhooks projection: DDL only for what is missing (the worker writes these tables)
        for last_index, ddl in (MODEL_DDL, RUNS_DDL):
            if (await (await conn.execute("SELECT to_regclass(%s)", (last_index,))).fetchone())[0] is None:
                await conn.execute(ddl)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        self.enabled = None
        await conn.execute("DROP TABLE IF EXISTS rm_agents, rm_agent_actions")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, AGENT_EVENTS):
            self.enabled = None
            await self._configuration(conn, e)
        elif isinstance(e, ev.MessageCreated):
            await self._message(conn, recorded.position, e)
        elif isinstance(e, ev.ConversationCreated):
            if not e.operator_only and e.website_id in await self._enabled(conn):
                await conn.execute(GREET, {"id": new_id(), "conversation": e.conversation_id, "customer": e.customer_id,
                                           "position": recorded.position, "website": e.website_id})
                await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))
        elif isinstance(e, ev.ConversationUpdated):
            if e.agent_paused:
                await self._cancel_waiting(conn, e.conversation_id)
        elif isinstance(e, ev.AgentActionOffered):
            await conn.execute(
                "INSERT INTO rm_agent_actions (customer_id, tool_call_id, conversation_id, agent_run_id, name, "
                "arguments, offered_at, offered_position) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (e.customer_id, e.tool_call_id, e.conversation_id, e.agent_run_id, e.name, e.arguments, e.at,
                 recorded.position))
            await conn.execute("UPDATE agent_runs SET acted = true WHERE id = %s", (e.agent_run_id,))
        elif isinstance(e, ev.AgentActionResult):
            await conn.execute(
                "UPDATE rm_agent_actions SET result = %s, result_position = %s "
                "WHERE conversation_id = %s AND tool_call_id = %s", (e.content, recorded.position, e.conversation_id,
                                                                     e.tool_call_id))
            if e.website_id in await self._enabled(conn):
                await self._ask(conn, recorded.position, e.conversation_id, None)
        elif isinstance(e, ev.AgentRunEnded):
            await self._ended(conn, e)

    async def _configuration(self, conn: psycopg.AsyncConnection, e: ev.Event) -> None:
        if isinstance(e, ev.AgentConfigured):
            await conn.execute(
                "INSERT INTO rm_agents (website_id, org_id, url, enabled, greeting, fallback_message, created_at, "
                "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (website_id) DO UPDATE SET "
                "url = EXCLUDED.url, enabled = EXCLUDED.enabled, greeting = EXCLUDED.greeting, "
                "fallback_message = EXCLUDED.fallback_message, updated_at = EXCLUDED.updated_at",
                (e.website_id, e.org_id, e.url, e.enabled, e.greeting, e.fallback_message, e.at, e.at))
        elif isinstance(e, ev.AgentSecretSet):
            await conn.execute("UPDATE rm_agents SET secret = %s, updated_at = %s WHERE website_id = %s",
                               (e.secret, e.at, e.website_id))
        elif isinstance(e, ev.AgentRemoved):
            await conn.execute("DELETE FROM rm_agents WHERE website_id = %s", (e.website_id,))
            await conn.execute("UPDATE agent_runs SET status = 'cancelled', updated_at = now() "
                               "WHERE website_id = %s AND status = 'pending'", (e.website_id,))

    async def _message(self, conn: psycopg.AsyncConnection, position: int, e: ev.MessageCreated) -> None:
        if e.agent_run_id is not None:
            await conn.execute("UPDATE agent_runs SET acted = true WHERE id = %s", (e.agent_run_id,))
            return
        if e.internal or e.website_id not in await self._enabled(conn):
            return  # most websites have no agent: their messages cost no statement here
        if e.sender == "customer":
            await self._ask(conn, position, e.conversation_id, e.message_id)
        elif e.campaign_id is None:  # the team replied: the agent is paused there (the core read model records it)
            await self._cancel_waiting(conn, e.conversation_id)

    async def _ask(self, conn: psycopg.AsyncConnection, position: int, conversation_id: uuid.UUID,
                   message_id: uuid.UUID | None) -> None:
        await conn.execute(ASK, {"conversation": conversation_id, "message": message_id, "position": position,
                                 "id": new_id()})
        await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))

    async def _cancel_waiting(self, conn: psycopg.AsyncConnection, conversation_id: uuid.UUID) -> None:
        await conn.execute("UPDATE agent_runs SET status = 'cancelled', updated_at = now() "
                           "WHERE conversation_id = %s AND status = 'pending'", (conversation_id,))

    async def _ended(self, conn: psycopg.AsyncConnection, e: ev.AgentRunEnded) -> None:
        """The run's outcome (the worker also wrote it, at once; this is the record a replay keeps), and
        the website's last run and last error for the operators' status."""
        await conn.execute(
            "UPDATE agent_runs SET status = %s, error_class = %s, error = %s, next_attempt_at = NULL, "
            "updated_at = now() WHERE id = %s AND status IN ('pending', 'running')",
            (e.outcome, e.error_class, e.error, e.agent_run_id))
        await conn.execute(
            "UPDATE rm_agents SET last_run_at = %(at)s, last_outcome = %(outcome)s, "
            "last_error_class = CASE WHEN %(failed)s THEN %(class)s ELSE last_error_class END, "
            "last_error = CASE WHEN %(failed)s THEN %(error)s ELSE last_error END, "
            "last_error_at = CASE WHEN %(failed)s THEN %(at)s ELSE last_error_at END WHERE website_id = %(website)s",
            {"at": e.at, "outcome": e.outcome, "failed": e.outcome != "succeeded", "class": e.error_class,
             "error": e.error, "website": e.website_id})
        await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))  # the conversation's next run may go

    async def _enabled(self, conn: psycopg.AsyncConnection) -> set[uuid.UUID]:
        if self.enabled is None:
            rows = await (await conn.execute("SELECT website_id FROM rm_agents WHERE enabled")).fetchall()
            self.enabled = {row[0] for row in rows}
        return self.enabled
