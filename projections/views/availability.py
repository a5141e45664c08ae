"""Operators' availability: `online`, `away` or `offline`, as the team, the widget, notifications and automatic
assignment see it.

What an operator chooses is an event (`OperatorAvailabilityChanged`, column `rm_operator_orgs.availability`,
`online` until they choose otherwise). Being at the dashboard is not: the dashboard reports the operator's
activity (keys, clicks, the tab coming back) at most every third of the delay, and each report moves
`parley_operator_activity.away_at` to now plus `PARLEY_OPERATOR_AWAY_AFTER_SECONDS`, with the setting of the API
process that received it. An operator who chose `online` reads as `away` once `away_at` has passed, and as
`online` again with their next activity: no worker, no event per idle spell, and every reader agrees since
the rule is one SQL expression on the database's clock. A disabled or removed member reads as `offline`."""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec
import psycopg

from commands.deciders.operator import Availability

# the availability of membership `m` (a row of rm_operator_orgs), as it reads now
EFFECTIVE = ("CASE WHEN m.status <> 'active' THEN 'offline' "
             "WHEN m.availability = 'online' AND NOT EXISTS (SELECT 1 FROM parley_operator_activity a "
             "WHERE a.org_id = m.org_id AND a.operator_id = m.operator_id AND a.away_at > now()) THEN 'away' "
             "ELSE m.availability END")


class OperatorAvailability(msgspec.Struct, rename="camel"):
    """The signed-in operator's availability: `status` as the team sees it now, `chosen` as they set it, and
    how long after their last activity at the dashboard `online` turns to `away`."""

    status: Availability
    chosen: Availability
    away_at: datetime | None  # when `online` turns to `away` unless the operator is active before
    away_after_seconds: float


async def record_activity(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID,
                          away_after_seconds: float) -> None:
    """The operator is at the dashboard now: they count as active for `away_after_seconds` more."""
    await conn.execute(
        "INSERT INTO parley_operator_activity (org_id, operator_id, away_at) "
        "VALUES (%s, %s, now() + make_interval(secs => %s)) "
        "ON CONFLICT (org_id, operator_id) DO UPDATE SET away_at = EXCLUDED.away_at",
        (org_id, operator_id, away_after_seconds))


async def availability_of(conn: psycopg.AsyncConnection, org_id: uuid.UUID, operator_id: uuid.UUID,
                          away_after_seconds: float) -> OperatorAvailability:
    row = await (await conn.execute(
        f"SELECT {EFFECTIVE}, m.availability, (SELECT a.away_at FROM parley_operator_activity a "
        "WHERE a.org_id = m.org_id AND a.operator_id = m.operator_id) "
        "FROM rm_operator_orgs m WHERE m.org_id = %s AND m.operator_id = %s", (org_id, operator_id))).fetchone()
    if row is None:  # a member the read model does not hold yet: as a new member reads
        return OperatorAvailability("away", "online", None, away_after_seconds)
    return OperatorAvailability(row[0], row[1], row[2], away_after_seconds)


async def online_operators(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                           among: list[uuid.UUID] | None = None) -> list[uuid.UUID]:
    """The operators of the organization who are online now (only those `among`, when given), by id."""
    rows = await (await conn.execute(
        f"SELECT m.operator_id FROM rm_operator_orgs m WHERE m.org_id = %s AND {EFFECTIVE} = 'online' "
        "AND (%s::uuid[] IS NULL OR m.operator_id = ANY(%s::uuid[])) ORDER BY m.operator_id",
        (org_id, among, among))).fetchall()
    return [row[0] for row in rows]


async def anyone_online(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID | None = None) -> bool:
    """Whether any operator who answers the organization's visitors (those of `website_id`, when given: the
    website's operators are its organization's) is online now: what the widget shows and what decides
    whether a notification waits for someone at the dashboard."""
    row = await (await conn.execute(
        f"SELECT EXISTS (SELECT 1 FROM rm_operator_orgs m WHERE m.org_id = %s AND {EFFECTIVE} = 'online') "
        "AND (%s::uuid IS NULL OR EXISTS (SELECT 1 FROM rm_websites w WHERE w.id = %s AND w.org_id = %s))",
        (org_id, website_id, website_id, org_id))).fetchone()
    return bool(row[0])
