"""The canned responses an operator may use: the organization's and their own personal ones, by shortcut
(personal first where both have it, as the composer's menu lists them)."""

from __future__ import annotations

import uuid

import msgspec
import psycopg

from commands.errors import NotFound
from commands.principal import Principal


class CannedResponse(msgspec.Struct):
    _id: uuid.UUID
    shortcut: str
    content: str
    personal: bool


VISIBLE = "org_id = %s AND (NOT personal OR author_id = %s)"
COLUMNS = "id, shortcut, content, personal"


async def list_canned_responses(conn: psycopg.AsyncConnection, principal: Principal) -> list[CannedResponse]:
    rows = await (await conn.execute(
        f"SELECT {COLUMNS} FROM rm_canned_responses WHERE {VISIBLE} ORDER BY shortcut, personal DESC, id",
        (principal.org_id, principal.operator_id))).fetchall()
    return [CannedResponse(*row) for row in rows]


async def read_canned_response(conn: psycopg.AsyncConnection, principal: Principal,
                               response_id: uuid.UUID) -> CannedResponse:
    row = await (await conn.execute(
        f"SELECT {COLUMNS} FROM rm_canned_responses WHERE {VISIBLE} AND id = %s",
        (principal.org_id, principal.operator_id, response_id))).fetchone()
    if row is None:
        raise NotFound("canned response not found")
    return CannedResponse(*row)
