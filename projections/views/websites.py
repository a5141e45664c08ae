"""Reading websites (`rm_websites`) for what is not a REST list: the origins a website's chat answers, and
an organization's websites by vanity name."""

from __future__ import annotations

import uuid

import psycopg


async def allowed_origins(conn: psycopg.AsyncConnection, website_id: uuid.UUID) -> list[str]:
    """The origins whose pages may call the website's visitor routes; empty for any origin (or no website)."""
    row = await (await conn.execute("SELECT allowed_origins FROM rm_websites WHERE id = %s",
                                    (website_id,))).fetchone()
    return (row and row[0]) or []


async def websites_by_name(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID | None = None
                           ) -> list[tuple[uuid.UUID, str]]:
    """The organization's websites (or the one given, if it is the organization's) as (id, name), by name."""
    return await (await conn.execute(
        "SELECT id, name FROM rm_websites WHERE org_id = %s AND (%s::uuid IS NULL OR id = %s) ORDER BY name, id",
        (org_id, website_id, website_id))).fetchall()
