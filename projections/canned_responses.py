"""The canned responses read model: each response with its author, for the list an operator sees (the
organization's and their own personal ones) and the composer's menu. Queries: views/canned_responses.py."""

from __future__ import annotations

from events import types as ev
from projections.handlers import Handler, ReadModel

TABLES = ("rm_canned_responses",)

DDL = """
CREATE TABLE IF NOT EXISTS rm_canned_responses (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, author_id uuid NOT NULL, personal boolean NOT NULL,
    shortcut text NOT NULL, content text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_canned_responses_org ON rm_canned_responses (org_id, shortcut);
"""


async def _created(conn, e: ev.CannedResponseCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_canned_responses (id, org_id, author_id, personal, shortcut, content, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.response_id, e.org_id, e.author_id, e.personal, e.shortcut, e.content, e.at, e.at))


async def _updated(conn, e: ev.CannedResponseUpdated) -> None:
    await conn.execute(
        "UPDATE rm_canned_responses SET personal = COALESCE(%s, personal), shortcut = COALESCE(%s, shortcut), "
        "content = COALESCE(%s, content), updated_at = %s WHERE id = %s",
        (e.personal, e.shortcut, e.content, e.at, e.response_id))


async def _deleted(conn, e: ev.CannedResponseDeleted) -> None:
    await conn.execute("DELETE FROM rm_canned_responses WHERE id = %s", (e.response_id,))


HANDLERS: dict[type, Handler] = {
    ev.CannedResponseCreated: _created,
    ev.CannedResponseUpdated: _updated,
    ev.CannedResponseDeleted: _deleted,
}


class CannedResponsesProjection(ReadModel):
    name, ddl, tables = "canned_responses", DDL, TABLES
    handlers = HANDLERS
    handles = tuple(HANDLERS)
