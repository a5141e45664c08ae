"""The team's workflow on a conversation, as the conversation read models keep it (`rm_conversations` of
the core read model, `rm_inbox` of the inbox's): assignee, team, labels (ids), priority and snooze. Both
tables hold the same columns, filled by the same handlers, so the list and the inbox filter on their own
rows. A visitor's message wakes a snoozed conversation (in each table's message handler); a scheduled
wake is `ConversationWoken`, which the snooze worker appends once the time has come.
"""

from __future__ import annotations

from events import types as ev
from projections.handlers import Handler

# `snoozed` stays true once `snoozed_until` passes until the scheduled wake is recorded; what is asleep
# now is ASLEEP, so that a conversation is back in the open views at its time whatever the worker's delay.
ASLEEP = "(snoozed AND (snoozed_until IS NULL OR snoozed_until > now()))"


def columns(table: str) -> str:
    """The DDL that gives `table` the workflow columns (a table made by an earlier version gains them)."""
    return f"""
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS assignee_id uuid, ADD COLUMN IF NOT EXISTS team_id uuid,
    ADD COLUMN IF NOT EXISTS labels uuid[] NOT NULL DEFAULT '{{}}',
    ADD COLUMN IF NOT EXISTS priority text NOT NULL DEFAULT 'none',
    ADD COLUMN IF NOT EXISTS snoozed boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS snoozed_until timestamptz;
CREATE INDEX IF NOT EXISTS {table}_labels ON {table} USING gin (labels);
CREATE INDEX IF NOT EXISTS {table}_snoozed ON {table} (snoozed_until) WHERE snoozed;
"""


def handlers(table: str, then: str = "") -> dict[type, Handler]:
    """The workflow events' handlers on `table`; `then` is more of the same SET (the core's version)."""
    more = f", {then}" if then else ""

    async def assigned(conn, e: ev.ConversationAssigned) -> None:
        await conn.execute(f"UPDATE {table} SET assignee_id = %s, team_id = %s{more} WHERE id = %s",
                           (e.assignee_id, e.team_id, e.conversation_id))

    async def labelled(conn, e: ev.ConversationLabelsChanged) -> None:
        await conn.execute(
            f"UPDATE {table} SET labels = ARRAY(SELECT DISTINCT l FROM unnest(labels || %s::uuid[]) AS l "
            f"WHERE l <> ALL(%s::uuid[]) ORDER BY l){more} WHERE id = %s", (e.added, e.removed, e.conversation_id))

    async def prioritised(conn, e: ev.ConversationPrioritySet) -> None:
        await conn.execute(f"UPDATE {table} SET priority = %s{more} WHERE id = %s", (e.priority, e.conversation_id))

    async def snoozed(conn, e: ev.ConversationSnoozed) -> None:
        await conn.execute(f"UPDATE {table} SET snoozed = true, snoozed_until = %s{more} WHERE id = %s",
                           (e.until, e.conversation_id))

    async def woken(conn, e: ev.ConversationWoken) -> None:
        await conn.execute(f"UPDATE {table} SET snoozed = false, snoozed_until = NULL{more} WHERE id = %s",
                           (e.conversation_id,))

    async def team_deleted(conn, e: ev.TeamDeleted) -> None:
        await conn.execute(f"UPDATE {table} SET team_id = NULL WHERE org_id = %s AND team_id = %s",
                           (e.org_id, e.team_id))

    async def label_deleted(conn, e: ev.LabelDeleted) -> None:
        await conn.execute(f"UPDATE {table} SET labels = array_remove(labels, %s) WHERE org_id = %s AND labels @> %s",
                           (e.label_id, e.org_id, [e.label_id]))

    return {
        ev.ConversationAssigned: assigned,
        ev.ConversationLabelsChanged: labelled,
        ev.ConversationPrioritySet: prioritised,
        ev.ConversationSnoozed: snoozed,
        ev.ConversationWoken: woken,
        ev.TeamDeleted: team_deleted,
        ev.LabelDeleted: label_deleted,
    }


# What a run of messages does to the snooze of its conversations: a visitor's message (not a note) wakes.
# A fragment of each table's message statement, whose `run` has `visitor_wrote` and whose target is `c`.
WAKE_ON_VISITOR = ("snoozed = c.snoozed AND NOT run.visitor_wrote, "
                   "snoozed_until = CASE WHEN run.visitor_wrote THEN NULL ELSE c.snoozed_until END")
VISITOR_WROTE = "bool_or(sender = 'customer' AND NOT internal) AS visitor_wrote"
