"""Reading a website's AI agent (`rm_agents`): its configuration and the status of its runs, never its secret."""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec
import psycopg


class AgentStatus(msgspec.Struct, rename="camel"):
    """What operators see of the agent's runs: the last one, and the last failure with its class
    (unreachable, refused, timed_out, protocol_error, run_error, interrupted)."""

    last_run_at: datetime | None
    last_outcome: str | None
    last_error_class: str | None
    last_error: str | None
    last_error_at: datetime | None


class AgentView(msgspec.Struct, rename="camel"):
    website_id: uuid.UUID
    url: str
    enabled: bool
    greeting: str | None
    fallback_message: str | None
    created_at: datetime
    updated_at: datetime
    status: AgentStatus


SELECT = ("SELECT website_id, url, enabled, greeting, fallback_message, created_at, updated_at, last_run_at, "
          "last_outcome, last_error_class, last_error, last_error_at FROM rm_agents WHERE website_id = %s "
          "AND org_id = %s")


async def read_agent(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID) -> AgentView | None:
    """The website's agent, if the organization's website has one."""
    row = await (await conn.execute(SELECT, (website_id, org_id))).fetchone()
    return row and AgentView(*row[:7], AgentStatus(*row[7:]))
