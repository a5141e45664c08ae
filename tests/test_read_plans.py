"""The hot list reads use an index that gives their order, whatever statistics the planner has.

A fresh deployment (or a table autovacuum has not analyzed yet) has none; a plan that sorts a whole
conversation to return its newest three messages costs a millisecond per read at a few thousand messages.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import psycopg
import pytest

from commands.principal import Principal
from projections.core import CoreProjection
from readapi.collections import MESSAGES, list_query

ROWS = 4000
CONVERSATIONS = 4


async def plan_of(database_url: str, sql: str, args: list) -> dict:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        row = await (await conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", args)).fetchone()
    return row[0][0]["Plan"]


def nodes(plan: dict) -> list[dict]:
    return [plan, *[node for child in plan.get("Plans", []) for node in nodes(child)]]


@pytest.fixture(scope="module")
def unanalyzed_messages(infra) -> tuple[str, uuid.UUID, list[uuid.UUID]]:
    """Messages of one organization in a few conversations, in a table the planner knows nothing about."""
    database_url = infra.new_database()
    org_id, conversations = uuid.uuid4(), [uuid.uuid4() for _ in range(CONVERSATIONS)]

    async def seed() -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await CoreProjection().create(conn)
            await conn.execute("ALTER TABLE rm_messages SET (autovacuum_enabled = false)")
            await conn.execute(
                "INSERT INTO rm_messages (id, org_id, website_id, conversation_id, content, sender, creation_time) "
                "SELECT gen_random_uuid(), %s, %s, (%s::uuid[])[1 + n %% %s], 'hello', 'customer', "
                "now() + n * interval '1 ms' FROM generate_series(1, %s) AS n",
                (org_id, uuid.uuid4(), conversations, CONVERSATIONS, ROWS))

    asyncio.run(seed())
    return database_url, org_id, conversations


@pytest.mark.parametrize("direction", ["DESC", "ASC"])
def test_a_conversations_messages_are_read_in_index_order_without_a_sort(unanalyzed_messages, direction):
    database_url, org_id, conversations = unanalyzed_messages
    principal = Principal("operator", org_id, uuid.uuid4())
    sql, args = list_query(MESSAGES, principal, {"conversationId": str(conversations[0]), "limit": "3",
                                                 "sortField": "creationTime", "sortDirection": direction})
    plan = asyncio.run(plan_of(database_url, sql, args))
    kinds = [node["Node Type"] for node in nodes(plan)]
    assert "Sort" not in kinds, json.dumps(plan, indent=1)
    assert any(node.get("Index Name") == "rm_messages_org_conversation" for node in nodes(plan)), json.dumps(plan)
