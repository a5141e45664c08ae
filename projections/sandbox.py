"""The sandbox read model: when each summary job was created. Its status is derived at read time
(created_at plus the job duration), so nothing has to run to finish a job."""

from __future__ import annotations

import psycopg

from events import types as ev
from events.store import Recorded

DDL = "CREATE TABLE IF NOT EXISTS rm_sandbox_jobs (id uuid PRIMARY KEY, created_at timestamptz NOT NULL)"


class SandboxProjection:
    name = "sandbox"

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(DDL)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute("DROP TABLE IF EXISTS rm_sandbox_jobs")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        event = recorded.event
        if isinstance(event, ev.SandboxJobCreated):
            await conn.execute("INSERT INTO rm_sandbox_jobs (id, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (event.job_id, event.at))
