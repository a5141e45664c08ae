"""The visitor-side read model: chat-session credentials and the metadata visitors' pages attach."""

from __future__ import annotations

import psycopg

from events import types as ev
from events.store import Recorded

DDL = """
CREATE TABLE IF NOT EXISTS rm_chat_sessions (
    token_hash text PRIMARY KEY, session_id uuid NOT NULL UNIQUE, org_id uuid NOT NULL, website_id uuid NOT NULL,
    customer_id uuid NOT NULL, created_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS rm_customer_metadata (
    customer_id uuid NOT NULL, key text NOT NULL, value text NOT NULL, org_id uuid NOT NULL,
    updated_at timestamptz NOT NULL, PRIMARY KEY (customer_id, key));
"""


class ChatProjection:
    name = "chat"

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(DDL)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute("DROP TABLE IF EXISTS rm_chat_sessions, rm_customer_metadata")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, ev.ChatSessionStarted):
            await conn.execute(
                "INSERT INTO rm_chat_sessions (token_hash, session_id, org_id, website_id, customer_id, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (e.token_hash, e.session_id, e.org_id, e.website_id, e.customer_id, e.at))
        elif isinstance(e, ev.CustomerMetadataSet):
            for key, value in e.values.items():
                if value is None:
                    await conn.execute("DELETE FROM rm_customer_metadata WHERE customer_id = %s AND key = %s",
                                       (e.customer_id, key))
                else:
                    await conn.execute(
                        "INSERT INTO rm_customer_metadata (customer_id, key, value, org_id, updated_at) "
                        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (customer_id, key) "
                        "DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at",
                        (e.customer_id, key, value, e.org_id, e.at))
