"""The mail worker on its own, for the kill test and bench/notifications.py: a database seeded with due
digests (one operator each), and the worker run as a child process that can be killed mid-batch.

    python -m tests.support.mail_worker DATABASE_URL SMTP_URL SECRETS_KEY   (runs the worker until killed)
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

from delivery.mail import Mailer, MailSettings
from events.sealing import Sealer
from projections.core import CoreProjection
from projections.mail import MailProjection
from projections.runner import ensure_tables

ROOT = Path(__file__).resolve().parents[2]
ROW_LEASE_SECONDS = 3.0  # short, so that rows a killed worker held are soon claimed again
LEADER_LEASE_SECONDS = 2.0

SEED = """
INSERT INTO rm_organizations (id, name, created_at) VALUES (%(org)s, 'Bench org', now()) ON CONFLICT DO NOTHING;
INSERT INTO rm_websites (id, org_id, name, brand_color, identity_secret, created_at)
VALUES (%(website)s, %(org)s, 'bench-site-' || %(batch)s, '#0f766e', '', now()) ON CONFLICT DO NOTHING;
INSERT INTO rm_customers (id, org_id, website_id, nickname, created_at, updated_at)
SELECT md5(%(batch)s || 'u' || n)::uuid, %(org)s, %(website)s, 'Visitor ' || n, now(), now() FROM generate_series(1, 100) n;
INSERT INTO rm_conversations (id, org_id, website_id, customer_id, created_at, last_edit_time)
SELECT md5(%(batch)s || 'c' || n)::uuid, %(org)s, %(website)s, md5(%(batch)s || 'u' || n)::uuid, now(), now()
FROM generate_series(1, 100) n;
INSERT INTO rm_messages (id, org_id, website_id, conversation_id, content, sender, creation_time)
SELECT md5(%(batch)s || 'm' || n)::uuid, %(org)s, %(website)s, md5(%(batch)s || 'c' || n)::uuid,
       'Hello, my order ' || n || ' has not arrived yet: could someone look?', 'customer', now()
FROM generate_series(1, 100) n;
INSERT INTO rm_operators (id, org_id, email, password_hash, created_at)
SELECT md5(%(batch)s || 'o' || n)::uuid, %(org)s, 'operator-' || %(batch)s || '-' || n || '@bench.test', '', now()
FROM generate_series(1, %(count)s) n;
INSERT INTO mail_digest_items (recipient, source, position, kind, conversation_id, website_id, at)
SELECT 'operator:' || md5(%(batch)s || 'o' || n)::uuid, '0', n, 'conversation.new',
       md5(%(batch)s || 'c' || (n %% 100 + 1))::uuid, %(website)s, now()
FROM generate_series(1, %(count)s) n;
INSERT INTO mail_outbox (id, org_id, website_id, recipient, kind, source, due_at, created_at)
SELECT gen_random_uuid(), %(org)s, %(website)s, 'operator:' || md5(%(batch)s || 'o' || n)::uuid, 'digest', '0',
       now(), now()
FROM generate_series(1, %(count)s) n;
"""


def create_tables(database_url: str) -> None:
    async def create() -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await ensure_tables(conn, CoreProjection(), MailProjection(300))
    asyncio.run(create())


def seed(database_url: str, batch: str, count: int) -> None:
    """`count` due digests, each to an operator of its own (`operator-<batch>-<n>@bench.test`)."""
    with psycopg.connect(database_url, autocommit=True) as conn, conn.transaction():
        values = {"org": uuid.uuid5(uuid.NAMESPACE_URL, "bench-org"),
                  "website": uuid.uuid5(uuid.NAMESPACE_URL, f"bench-{batch}"), "batch": batch, "count": count}
        for statement in SEED.split(";\n"):
            if statement.strip():
                conn.execute(statement, {k: v for k, v in values.items() if f"%({k})s" in statement})


def statuses(database_url: str) -> dict[str, int]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return dict(conn.execute("SELECT status, count(*) FROM mail_outbox GROUP BY status").fetchall())


def start_worker(database_url: str, smtp_url: str, key: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.support.mail_worker", database_url, smtp_url, key],
                            cwd=ROOT)


async def run_worker(database_url: str, smtp_url: str, key: str) -> None:
    settings = MailSettings(smtp_url, "notify@bench.test", "", "http://127.0.0.1:8000")
    await Mailer(database_url, settings, Sealer(key), 300, LEADER_LEASE_SECONDS,
                 row_lease_seconds=ROW_LEASE_SECONDS).run()


if __name__ == "__main__":
    asyncio.run(run_worker(*sys.argv[1:4]))
