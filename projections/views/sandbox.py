"""Reading the keyless sandbox's summary jobs (`rm_sandbox_jobs`)."""

from __future__ import annotations

import uuid
from datetime import datetime

import psycopg


async def job_created_at(conn: psycopg.AsyncConnection, job_id: uuid.UUID) -> datetime | None:
    """When the sandbox job was started; None when no job has this id."""
    row = await (await conn.execute("SELECT created_at FROM rm_sandbox_jobs WHERE id = %s", (job_id,))).fetchone()
    return row and row[0]
