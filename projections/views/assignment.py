"""Reading automatic assignment (`rm_assignment_*`, projections/assignment.py): a website's setting as the
API shows it, and what the assigner needs: the conversations waiting, the operators who may take them and
how many open conversations each has assigned (`rm_conversations.assignee_id`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

import msgspec
import psycopg

from projections.views.availability import online_operators


class AssignmentSetting(msgspec.Struct, rename="camel"):
    """A website's automatic assignment (`mode` `off` until set)."""

    website_id: uuid.UUID
    mode: Literal["off", "round-robin", "least-busy"]
    capacity: int
    team_id: uuid.UUID | None
    assign_on_reply: bool


DEFAULT_CAPACITY = 10  # what a website that never set one shows


async def assignment_of(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                        website_name: str) -> AssignmentSetting | None:
    """The setting of the organization's website of that name; None when it has no such website."""
    row = await (await conn.execute(
        "SELECT w.id, COALESCE(s.mode, 'off'), COALESCE(s.capacity, %s), s.team_id, COALESCE(s.assign_on_reply, false) "
        "FROM rm_websites w LEFT JOIN rm_assignment_settings s ON s.website_id = w.id "
        "WHERE w.name = %s AND w.org_id = %s", (DEFAULT_CAPACITY, website_name, org_id))).fetchone()
    return row and AssignmentSetting(*row)


@dataclass(frozen=True)
class Waiting:
    """A conversation waiting for an assignee, with its website's setting and round-robin cursor."""

    conversation_id: uuid.UUID
    org_id: uuid.UUID
    website_id: uuid.UUID
    claim_by: uuid.UUID | None  # the operator whose reply takes it; None: the website's mode chooses
    mode: str
    capacity: int
    team_id: uuid.UUID | None
    last: uuid.UUID | None


async def waiting(conn: psycopg.AsyncConnection, limit: int) -> list[Waiting]:
    """The conversations waiting, oldest first."""
    rows = await (await conn.execute(
        "SELECT c.conversation_id, c.org_id, c.website_id, c.claim_by, s.mode, s.capacity, s.team_id, k.operator_id "
        "FROM rm_assignment_conversations c JOIN rm_assignment_settings s USING (website_id) "
        "LEFT JOIN rm_assignment_cursors k USING (website_id) "
        "WHERE c.assignee_id IS NULL AND NOT c.resolved AND NOT c.spam AND (c.queued OR c.claim_by IS NOT NULL) "
        "ORDER BY c.seq LIMIT %s", (limit,))).fetchall()
    return [Waiting(*row) for row in rows]


async def candidates(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                     team_id: uuid.UUID | None) -> tuple[list[uuid.UUID], dict[uuid.UUID, int]]:
    """The operators online now (the team's members only, for a team) and each one's open conversations
    assigned (neither resolved nor spam), in the whole organization."""
    among = None
    if team_id is not None:
        row = await (await conn.execute("SELECT member_ids FROM rm_teams WHERE id = %s AND org_id = %s",
                                        (team_id, org_id))).fetchone()
        among = list(row[0]) if row else []
    online = await online_operators(conn, org_id, among)
    rows = await (await conn.execute(
        "SELECT assignee_id, count(*) FROM rm_conversations WHERE org_id = %s AND assignee_id = ANY(%s) "
        "AND NOT resolved AND NOT spam GROUP BY assignee_id", (org_id, online))).fetchall()
    return online, dict(rows)
