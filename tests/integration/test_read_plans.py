"""The list reads use an index that gives their order, so a page never sorts everything before it.

A plan that sorts a whole conversation to return its newest three messages costs a millisecond per read
at a few thousand messages, and one that sorts an organization's conversations for the newest twenty,
25 ms at 200,000. The reads by conversation and the conversation list hold even on tables the planner has
no statistics of yet (a fresh deployment, or before autovacuum's first analysis).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass

import psycopg
import pytest

from commands.principal import Principal
from projections.core import CoreProjection
from projections.views.collections import CONVERSATIONS, CUSTOMERS, MESSAGES, Collection, list_query

ROWS = 4000
CONVERSATION_COUNT = 20_000
TALKING = 4  # conversations that hold the messages
WEBSITES = 3
TABLES = ("rm_customers", "rm_conversations", "rm_messages")


async def plan_of(database_url: str, sql: str, args: list) -> dict:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        row = await (await conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", args)).fetchone()
    return row[0][0]["Plan"]


def nodes(plan: dict) -> list[dict]:
    return [plan, *[node for child in plan.get("Plans", []) for node in nodes(child)]]


@dataclass
class Seeded:
    database_url: str
    org_id: uuid.UUID
    websites: list[uuid.UUID]
    conversations: list[uuid.UUID]

    def plan(self, collection: Collection, params: dict[str, str]) -> dict:
        sql, args = list_query(collection, Principal("operator", self.org_id, uuid.uuid4()), params)
        return asyncio.run(plan_of(self.database_url, sql, args))


def seed(infra, *, analyzed: bool) -> Seeded:
    """One organization's customers and conversations over a few websites, and messages in a few of the
    conversations; with `analyzed`, the planner has statistics of them, as autovacuum gives it in time."""
    seeded = Seeded(infra.new_database(), uuid.uuid4(), [uuid.uuid4() for _ in range(WEBSITES)],
                    [uuid.uuid4() for _ in range(CONVERSATION_COUNT)])

    async def fill() -> None:
        async with await psycopg.AsyncConnection.connect(seeded.database_url, autocommit=True) as conn:
            await CoreProjection().create(conn)
            for table in TABLES:
                await conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
            await conn.execute(
                "INSERT INTO rm_customers (id, org_id, website_id, created_at, updated_at) "
                "SELECT gen_random_uuid(), %s, (%s::uuid[])[1 + n %% %s], now(), now() FROM generate_series(1, %s) n",
                (seeded.org_id, seeded.websites, WEBSITES, CONVERSATION_COUNT))
            await conn.execute(
                "INSERT INTO rm_conversations (id, org_id, website_id, customer_id, created_at, last_edit_time) "
                "SELECT id, %s, (%s::uuid[])[1 + n %% %s], gen_random_uuid(), now(), now() + n * interval '1 ms' "
                "FROM unnest(%s::uuid[]) WITH ORDINALITY AS c(id, n)",
                (seeded.org_id, seeded.websites, WEBSITES, seeded.conversations))
            await conn.execute(
                "INSERT INTO rm_messages (id, org_id, website_id, conversation_id, content, sender, creation_time) "
                "SELECT gen_random_uuid(), %s, %s, (%s::uuid[])[1 + n %% %s], 'hello', 'customer', "
                "now() + n * interval '1 ms' FROM generate_series(1, %s) AS n",
                (seeded.org_id, seeded.websites[0], seeded.conversations[:TALKING], TALKING, ROWS))
            if analyzed:
                await conn.execute(f"ANALYZE {', '.join(TABLES)}")

    asyncio.run(fill())
    return seeded


@pytest.fixture(scope="module")
def unanalyzed(infra) -> Seeded:
    return seed(infra, analyzed=False)


@pytest.fixture(scope="module")
def analyzed(infra) -> Seeded:
    return seed(infra, analyzed=True)


def assert_read_by_index_without_a_sort(plan: dict, index: str) -> None:
    assert "Sort" not in [node["Node Type"] for node in nodes(plan)], json.dumps(plan, indent=1)
    assert any(node.get("Index Name") == index for node in nodes(plan)), json.dumps(plan, indent=1)


@pytest.mark.parametrize("direction", ["DESC", "ASC"])
def test_a_conversations_messages_are_read_in_index_order_without_a_sort(unanalyzed, direction):
    plan = unanalyzed.plan(MESSAGES, {"conversationId": str(unanalyzed.conversations[0]), "limit": "3",
                                      "sortField": "creationTime", "sortDirection": direction})
    assert_read_by_index_without_a_sort(plan, "rm_messages_org_conversation")


def test_the_newest_conversations_are_read_in_index_order_without_a_sort(unanalyzed):
    assert_read_by_index_without_a_sort(unanalyzed.plan(CONVERSATIONS, {"limit": "20"}), "rm_conversations_recent")
    assert_read_by_index_without_a_sort(
        unanalyzed.plan(CONVERSATIONS, {"websiteId": str(unanalyzed.websites[1]), "limit": "20"}),
        "rm_conversations_website_recent")


def test_an_organizations_first_messages_and_customers_are_read_without_a_sort(analyzed):
    """With no conversation named, an organization-wide page: once the planner knows the organization has
    many rows (without statistics it guesses a few, and a sort of a few is what it should pick)."""
    assert_read_by_index_without_a_sort(analyzed.plan(MESSAGES, {"limit": "20"}), "rm_messages_recent")
    assert_read_by_index_without_a_sort(analyzed.plan(CUSTOMERS, {"limit": "20"}), "rm_customers_in_org")


def test_a_read_model_from_an_earlier_version_trades_its_old_indexes_for_the_new(infra):
    database_url = infra.new_database()
    old = {"rm_conversations_org": "rm_conversations (org_id, website_id, last_edit_time DESC)",
           "rm_messages_conversation": "rm_messages (conversation_id, creation_time, id)",
           "rm_messages_org": "rm_messages (org_id, website_id, id)"}

    async def upgrade() -> set[str]:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await CoreProjection().create(conn)
            for name, definition in old.items():
                await conn.execute(f"CREATE INDEX {name} ON {definition}")
            await CoreProjection().create(conn)
            rows = await (await conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = ANY(%s)",
                                             (list(TABLES),))).fetchall()
        return {name for (name,) in rows}

    indexes = asyncio.run(upgrade())
    assert not indexes & set(old)
    assert {"rm_conversations_recent", "rm_conversations_website_recent", "rm_messages_org_conversation",
            "rm_messages_recent", "rm_customers_in_org"} <= indexes
