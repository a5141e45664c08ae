"""The visitor-side read model: chat-session credentials, and the page context each session's widget
exposes to the AI agent (its readables and actions, the latest set per session)."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import psycopg
from psycopg.types.json import Jsonb

from events import types as ev
from events.store import CREDENTIAL_GENERATION
from projections.handlers import ReadModel

DDL = """
CREATE TABLE IF NOT EXISTS rm_chat_sessions (
    token_hash text PRIMARY KEY, session_id uuid NOT NULL UNIQUE, org_id uuid NOT NULL, website_id uuid NOT NULL,
    customer_id uuid NOT NULL, created_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS rm_chat_context (
    session_id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, customer_id uuid NOT NULL,
    readables jsonb NOT NULL, actions jsonb NOT NULL, updated_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_chat_context_customer ON rm_chat_context (customer_id, updated_at DESC);
-- a session its visitor ended (signed out): its token no longer signs anyone in
ALTER TABLE rm_chat_sessions ADD COLUMN IF NOT EXISTS ended_at timestamptz;
"""


async def _session(conn, e: ev.ChatSessionStarted) -> None:
    await conn.execute(
        "INSERT INTO rm_chat_sessions (token_hash, session_id, org_id, website_id, customer_id, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.token_hash, e.session_id, e.org_id, e.website_id, e.customer_id, e.at))


async def _session_ended(conn, e: ev.ChatSessionEnded) -> None:
    await conn.execute("UPDATE rm_chat_sessions SET ended_at = %s WHERE session_id = %s", (e.at, e.session_id))
    # processes that keep the principal they looked up look it up again; appends checked before now are refused
    await conn.execute(f"UPDATE {CREDENTIAL_GENERATION} SET generation = generation + 1")


async def _context(conn, e: ev.ChatContextSet) -> None:
    # events arrive in log order, so the row always holds the session's newest set
    await conn.execute(
        "INSERT INTO rm_chat_context (session_id, org_id, website_id, customer_id, readables, actions, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET readables = EXCLUDED.readables, "
        "actions = EXCLUDED.actions, updated_at = EXCLUDED.updated_at",
        (e.session_id, e.org_id, e.website_id, e.customer_id, Jsonb(msgspec.to_builtins(e.readables)),
         Jsonb(msgspec.to_builtins(e.actions)), e.at))


class ChatProjection(ReadModel):
    name, ddl, tables = "chat", DDL, ("rm_chat_sessions", "rm_chat_context")
    handlers = {ev.ChatSessionStarted: _session, ev.ChatSessionEnded: _session_ended, ev.ChatContextSet: _context}


class VisitorContext(msgspec.Struct, rename="camel"):
    """What the AI agent may read of the visitor's page: the readables and actions that belong to
    nobody in particular (no `userId`) or to the signed-in user the customer is."""

    session_id: uuid.UUID
    customer_id: uuid.UUID
    user_id: str | None
    readables: list[ev.Readable]
    actions: list[ev.Action]


def _theirs(items: list[dict[str, Any]], user_id: str | None) -> list[dict[str, Any]]:
    return [item for item in items if not item.get("userId") or item["userId"] == user_id]


async def visitor_context(conn: psycopg.AsyncConnection, org_id: uuid.UUID, customer_id: uuid.UUID,
                          session_id: uuid.UUID | None = None) -> VisitorContext | None:
    """The visitor's current context: their session's (when named) or their most recently set one."""
    sql = ("SELECT x.session_id, x.customer_id, c.user_id, x.readables, x.actions FROM rm_chat_context x "
           "JOIN rm_customers c ON c.id = x.customer_id WHERE x.org_id = %s AND x.customer_id = %s")
    args: list[Any] = [org_id, customer_id]
    if session_id is not None:
        sql, args = sql + " AND x.session_id = %s", [*args, session_id]
    row = await (await conn.execute(sql + " ORDER BY x.updated_at DESC LIMIT 1", args)).fetchone()
    if row is None:
        return None
    session, customer, user_id, readables, actions = row
    return msgspec.convert({"sessionId": session, "customerId": customer, "userId": user_id,
                            "readables": _theirs(readables, user_id), "actions": _theirs(actions, user_id)},
                           VisitorContext)
