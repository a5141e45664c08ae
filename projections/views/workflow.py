"""The organization's teams and labels as `/api/teams` and `/api/labels` show them, and a conversation's
version (its ETag)."""

from __future__ import annotations

import uuid

import msgspec
import psycopg

from commands.errors import NotFound
from commands.principal import Principal
from projections.views.collections import Collection


class Team(msgspec.Struct, rename={"id": "_id", "member_ids": "memberIds"}):
    id: uuid.UUID
    name: str
    member_ids: list[uuid.UUID]


class Label(msgspec.Struct, rename={"id": "_id"}):
    id: uuid.UUID
    name: str
    color: str


TEAMS = Collection(name="teams", table="rm_teams", shape=Team, select="id, name, member_ids", filters={},
                   sorts={"name": "lower(name)"}, default_sort="name", website_column=None)
LABELS = Collection(name="labels", table="rm_labels", shape=Label, select="id, name, color", filters={},
                    sorts={"name": "lower(name)"}, default_sort="name", website_column=None)


async def read_all(conn: psycopg.AsyncConnection, collection: Collection, principal: Principal) -> list:
    """Every team (or label) of the organization, by name."""
    rows = await (await conn.execute(
        f"SELECT {collection.select} FROM {collection.table} WHERE org_id = %s ORDER BY lower(name), id",
        (principal.org_id,))).fetchall()
    return [collection.row_object(row) for row in rows]


async def conversation_version(conn: psycopg.AsyncConnection, principal: Principal,
                               conversation_id: uuid.UUID | None) -> int:
    """The version of the conversation's stream as the read model holds it (its ETag)."""
    row = conversation_id and await (await conn.execute(
        "SELECT version FROM rm_conversations WHERE id = %s AND org_id = %s", (conversation_id, principal.org_id),
    )).fetchone()
    if not row:
        raise NotFound("conversation not found")
    return row[0]


async def due_wakes(conn: psycopg.AsyncConnection, limit: int,
                    longest_wait: float) -> tuple[list[tuple[uuid.UUID, uuid.UUID]], float]:
    """The snoozed conversations whose time has come, (organization, conversation), and the seconds until
    the next one's (at most `longest_wait`)."""
    due = await (await conn.execute(
        "SELECT org_id, id FROM rm_conversations WHERE snoozed AND snoozed_until <= now() "
        "ORDER BY snoozed_until LIMIT %s", (limit,))).fetchall()
    row = await (await conn.execute(
        "SELECT EXTRACT(EPOCH FROM min(snoozed_until) - now()) FROM rm_conversations "
        "WHERE snoozed AND snoozed_until > now()")).fetchone()
    wait = longest_wait if row[0] is None else min(longest_wait, max(float(row[0]), 0.0))
    return [(org_id, conversation_id) for org_id, conversation_id in due], wait
