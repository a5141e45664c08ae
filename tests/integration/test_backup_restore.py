"""docs/deployment.md's backup and restore, run as written: `pg_dump --format=custom` of a live database,
`pg_restore` into a fresh one, every read model rebuilt there from the restored events with
`parley projections rebuild`, and the rebuilt read models equal the originals row for row."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psycopg

from events.store import EVENTS_TABLE
from parley.embedded import postgres_programs
from parley.runtime import PROJECTIONS
from tests.support.history_seed import story


def pg_program(name: str) -> str:
    """pg_dump and pg_restore of the embedded server's own version (the suite's PostgreSQL)."""
    return str(postgres_programs() / name)


def caught_up(database_url: str) -> bool:
    with psycopg.connect(database_url, autocommit=True) as conn:
        head = conn.execute(f"SELECT coalesce(max(notification_id), 0) FROM {EVENTS_TABLE}").fetchone()[0]
        behind = conn.execute("SELECT count(*) FROM parley_projection_positions WHERE position < %s AND name <> "
                              "'search'", (head,)).fetchone()[0]
    return behind == 0


def read_models(database_url: str) -> dict[str, list[tuple]]:
    """Every rm_* table's rows as text, sorted: what a reader can see."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'rm\\_%' ORDER BY 1")]
        return {table: sorted(conn.execute(f"SELECT t::text FROM {table} t").fetchall()) for table in tables}


def test_a_dump_restored_into_a_fresh_database_rebuilds_equal_read_models(server, http, tenant, infra, tmp_path):
    for _ in range(3):
        story(http, tenant)
    deadline = time.monotonic() + 30
    while not caught_up(server.database_url):
        assert time.monotonic() < deadline, "the read models did not catch up with the store"
        time.sleep(0.1)
    before = read_models(server.database_url)
    assert before["rm_messages"] and before["rm_conversations"]

    dump = tmp_path / "parley.dump"
    subprocess.run([pg_program("pg_dump"), "--format=custom", f"--file={dump}", server.database_url], check=True)
    restored_url = infra.new_database()
    subprocess.run([pg_program("pg_restore"), "--no-owner", f"--dbname={restored_url}", str(dump)], check=True)
    with psycopg.connect(restored_url, autocommit=True) as conn:  # nothing read from the copy's read models
        for table in before:
            conn.execute(f"TRUNCATE {table} CASCADE")

    env = {**server.env, "PARLEY_DATABASE_URL": restored_url}
    rebuilt = subprocess.run([sys.executable, "-m", "parley.cli", "projections", "rebuild", "--data-dir",
                              str(tmp_path / "data")], env=env, capture_output=True, text=True, timeout=600)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert set(json.loads(rebuilt.stdout)["rebuilt"]) == set(PROJECTIONS)
    assert read_models(restored_url) == before
