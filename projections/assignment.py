"""The automatic-assignment read model: each website's setting, the conversations of websites that assign
(whether they wait for an assignee, or for the operator who replied in them to take them), and each website's
round-robin cursor (the operator the service assigned last). The assigner (delivery/assignment.py) reads it
through projections/views/assignment.py and is woken by its NOTIFY.

A conversation waits while it is open (neither resolved nor spam), has no assignee, and either was created
while its website assigned automatically (`queued`) or an operator replied in it while the website lets a
reply take it (`claim_by`, the first such operator)."""

from __future__ import annotations

from events import types as ev
from projections.handlers import CONVERSATIONS_CREATED, Handler, ReadModel, as_json

WAKE_CHANNEL = "parley_assignment"  # notified when there may be a conversation to assign, or someone to take it

DDL = """
CREATE TABLE IF NOT EXISTS rm_assignment_settings (
    website_id uuid PRIMARY KEY, org_id uuid NOT NULL, mode text NOT NULL, capacity integer NOT NULL,
    team_id uuid, assign_on_reply boolean NOT NULL);
CREATE TABLE IF NOT EXISTS rm_assignment_conversations (
    conversation_id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY, assignee_id uuid, resolved boolean NOT NULL DEFAULT false,
    spam boolean NOT NULL DEFAULT false, queued boolean NOT NULL, claim_by uuid);
-- what the assigner reads: the conversations waiting, oldest first
CREATE INDEX IF NOT EXISTS rm_assignment_waiting ON rm_assignment_conversations (seq)
    WHERE assignee_id IS NULL AND NOT resolved AND NOT spam AND (queued OR claim_by IS NOT NULL);
CREATE TABLE IF NOT EXISTS rm_assignment_cursors (website_id uuid PRIMARY KEY, operator_id uuid NOT NULL);
"""
TABLES = ("rm_assignment_settings", "rm_assignment_conversations", "rm_assignment_cursors")


async def _wake(conn) -> None:
    await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))


async def _configured(conn, e: ev.WebsiteAssignmentConfigured) -> None:
    await conn.execute(
        "INSERT INTO rm_assignment_settings (website_id, org_id, mode, capacity, team_id, assign_on_reply) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (website_id) DO UPDATE SET mode = EXCLUDED.mode, "
        "capacity = EXCLUDED.capacity, team_id = EXCLUDED.team_id, assign_on_reply = EXCLUDED.assign_on_reply",
        (e.website_id, e.org_id, e.mode, e.capacity, e.team_id, e.assign_on_reply))
    if e.mode == "off":  # those still waiting stay unassigned, as the website now wants
        await conn.execute("UPDATE rm_assignment_conversations SET queued = false WHERE website_id = %s AND queued",
                           (e.website_id,))
    await _wake(conn)


async def _created(conn, events: list[ev.ConversationCreated]) -> None:
    """A conversation of a website that assigns (or lets a reply take a conversation) is followed here, in
    the order they came; the assigner is woken when there is one."""
    await conn.execute(
        f"WITH inserted AS (INSERT INTO rm_assignment_conversations (conversation_id, org_id, website_id, queued) "
        f"SELECT c.conversation_id, c.org_id, s.website_id, s.mode <> 'off' AND NOT c.operator_only "
        f"FROM {CONVERSATIONS_CREATED} JOIN rm_assignment_settings s ON s.website_id = c.website_id "
        "WHERE s.mode <> 'off' OR s.assign_on_reply ORDER BY c.n ON CONFLICT DO NOTHING RETURNING 1) "
        "SELECT pg_notify(%s, '') WHERE EXISTS (SELECT FROM inserted)", (as_json(events), WAKE_CHANNEL))


async def _assigned(conn, e: ev.ConversationAssigned) -> None:
    if e.actor is None and e.assignee_id is not None:  # the service's: the website's round-robin moves on
        await conn.execute(
            "INSERT INTO rm_assignment_cursors (website_id, operator_id) SELECT website_id, %s "
            "FROM rm_assignment_conversations WHERE conversation_id = %s AND queued "
            "ON CONFLICT (website_id) DO UPDATE SET operator_id = EXCLUDED.operator_id",
            (e.assignee_id, e.conversation_id))
    await conn.execute("UPDATE rm_assignment_conversations SET assignee_id = %s, queued = false, claim_by = NULL "
                       "WHERE conversation_id = %s", (e.assignee_id, e.conversation_id))


async def _updated(conn, e: ev.ConversationUpdated) -> None:
    if e.resolved is not None or e.spam is not None:
        await conn.execute("UPDATE rm_assignment_conversations SET resolved = COALESCE(%s, resolved), "
                           "spam = COALESCE(%s, spam) WHERE conversation_id = %s",
                           (e.resolved, e.spam, e.conversation_id))


async def _replies(conn, events: list[ev.MessageCreated]) -> None:
    """One statement for a run of messages: an operator's reply (not a note, not the AI agent's) to an
    unassigned conversation of a website that lets a reply take it makes that operator its claimant."""
    replies = [{"conversation_id": e.conversation_id, "operator_id": e.operator_id} for e in events
               if e.sender == "operator" and not e.internal and e.operator_id is not None and e.author != "agent"]
    if not replies:
        return
    claimed = await conn.execute(
        "UPDATE rm_assignment_conversations c SET claim_by = r.operator_id "
        "FROM (SELECT DISTINCT ON (conversation_id) * FROM json_to_recordset(%s::json) "
        "AS r(conversation_id uuid, operator_id uuid)) r, rm_assignment_settings s "
        "WHERE c.conversation_id = r.conversation_id AND s.website_id = c.website_id AND s.assign_on_reply "
        "AND c.assignee_id IS NULL AND c.claim_by IS NULL", (as_json(replies),))
    if claimed.rowcount:
        await _wake(conn)


async def _someone_changed(conn, _: ev.Event) -> None:
    """An operator came online, or a team changed: a conversation that waited may have someone now."""
    await _wake(conn)


HANDLERS: dict[type, Handler] = {
    ev.WebsiteAssignmentConfigured: _configured,
    ev.ConversationAssigned: _assigned,
    ev.ConversationUpdated: _updated,
    ev.OperatorAvailabilityChanged: _someone_changed,
    ev.TeamMembersSet: _someone_changed,
}


class AssignmentProjection(ReadModel):
    name, ddl, tables = "assignment", DDL, TABLES
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _replies, ev.ConversationCreated: _created}
    handles = (*HANDLERS, *run_handlers)
