"""Reading operators and their organizations (`rm_operators`, `rm_operator_orgs`, `rm_organizations`,
`rm_operator_revocations`): sign-in by e-mail, the presented token's session, the organizations an
operator may act in, and whether a connection made at some time still admits the operator."""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec
import psycopg


class Session(msgspec.Struct, rename="camel"):
    """Who the presented operator token signs in, and the one organization it is bound to."""

    operator_id: str
    email: str
    organization_id: str
    organization_name: str


class SigningIn(msgspec.Struct):
    """The operator an e-mail address names, with what checks their password."""

    id: uuid.UUID
    org_id: uuid.UUID  # the organization the operator was created in
    password_hash: str


async def operator_by_email(conn: psycopg.AsyncConnection, email: str) -> SigningIn | None:
    """The operator with this e-mail address, compared as stored (trimmed, lower case); None if none."""
    row = await (await conn.execute("SELECT id, org_id, password_hash FROM rm_operators WHERE email = %s",
                                    (email.strip().lower(),))).fetchone()
    return row and SigningIn(*row)


async def operator_session(conn: psycopg.AsyncConnection, operator_id: uuid.UUID, org_id: uuid.UUID) -> Session:
    email, name = await (await conn.execute(
        "SELECT o.email, g.name FROM rm_operators o, rm_organizations g WHERE o.id = %s AND g.id = %s",
        (operator_id, org_id))).fetchone()
    return Session(str(operator_id), email, str(org_id), name)


async def organizations_of(conn: psycopg.AsyncConnection, operator_id: uuid.UUID) -> list[tuple[uuid.UUID, str]]:
    """The organizations the operator belongs to (the one created in, and those added), as (id, name), by name."""
    return await (await conn.execute(
        "SELECT g.id, g.name FROM rm_organizations g WHERE g.id IN ("
        "SELECT org_id FROM rm_operators WHERE id = %s UNION SELECT org_id FROM rm_operator_orgs "
        "WHERE operator_id = %s) ORDER BY g.name, g.id", (operator_id, operator_id))).fetchall()


async def still_admitted(conn: psycopg.AsyncConnection, operator_id: uuid.UUID, org_id: uuid.UUID,
                         since: datetime) -> bool:
    """Whether a session of the operator in the organization made at `since` still stands: the operator still
    belongs to the organization (the one created in, or one added) and no revocation of the operator's
    sessions came after it."""
    row = await (await conn.execute(
        "SELECT (EXISTS (SELECT 1 FROM rm_operators o WHERE o.id = %(operator)s AND o.org_id = %(org)s) "
        "OR EXISTS (SELECT 1 FROM rm_operator_orgs m WHERE m.operator_id = %(operator)s AND m.org_id = %(org)s)) "
        "AND NOT EXISTS (SELECT 1 FROM rm_operator_revocations r "
        "WHERE r.operator_id = %(operator)s AND r.revoked_before >= %(since)s)",
        {"operator": operator_id, "org": org_id, "since": since})).fetchone()
    return row[0]
