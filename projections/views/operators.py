"""Reading operators and their organizations (`rm_operators`, `rm_operator_orgs`, `rm_organizations`,
`rm_operator_revocations`): sign-in by e-mail, the presented token's session, the organizations an
operator may act in, an organization's team, and the role a connection made at some time still admits
the operator with."""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec
import psycopg

from commands.principal import Role


class Session(msgspec.Struct, rename="camel"):
    """Who the presented operator token signs in, and the one organization it is bound to."""

    operator_id: str
    email: str
    organization_id: str
    organization_name: str


class SigningIn(msgspec.Struct):
    """The operator an e-mail address names, with what checks their password."""

    id: uuid.UUID
    org_id: uuid.UUID  # the organization it signs in to: the one it was created in, else the first it joined
    password_hash: str


# An operator acts in an organization while its membership there is active: not disabled, not removed.
ACTIVE = "status = 'active'"


async def operator_by_email(conn: psycopg.AsyncConnection, email: str) -> SigningIn | None:
    """The operator with this e-mail address, compared as stored (trimmed, lower case), and the organization
    it signs in to; None if none, or if it has no active membership (disabled or removed everywhere)."""
    row = await (await conn.execute(
        "SELECT o.id, m.org_id, o.password_hash FROM rm_operators o JOIN rm_operator_orgs m ON m.operator_id = o.id "
        f"WHERE o.email = %s AND m.{ACTIVE} ORDER BY m.org_id = o.org_id DESC, m.joined_at LIMIT 1",
        (email.strip().lower(),))).fetchone()
    return row and SigningIn(*row)


async def operator_session(conn: psycopg.AsyncConnection, operator_id: uuid.UUID, org_id: uuid.UUID) -> Session:
    email, name = await (await conn.execute(
        "SELECT o.email, g.name FROM rm_operators o, rm_organizations g WHERE o.id = %s AND g.id = %s",
        (operator_id, org_id))).fetchone()
    return Session(str(operator_id), email, str(org_id), name)


async def organizations_of(conn: psycopg.AsyncConnection, operator_id: uuid.UUID) -> list[tuple[uuid.UUID, str]]:
    """The organizations the operator is an active member of (the one created in, and those added), as
    (id, name), by name."""
    return await (await conn.execute(
        "SELECT g.id, g.name FROM rm_organizations g WHERE g.id IN ("
        f"SELECT org_id FROM rm_operator_orgs WHERE operator_id = %s AND {ACTIVE}) ORDER BY g.name, g.id",
        (operator_id,))).fetchall()


async def member_ids(conn: psycopg.AsyncConnection, org_id: uuid.UUID) -> list[uuid.UUID]:
    """The operators of the organization, disabled ones included: whom a change of its team loads."""
    rows = await (await conn.execute("SELECT operator_id FROM rm_operator_orgs WHERE org_id = %s "
                                     "AND status <> 'removed'", (org_id,))).fetchall()
    return [row[0] for row in rows]


async def admitted_role(conn: psycopg.AsyncConnection, operator_id: uuid.UUID, org_id: uuid.UUID,
                        since: datetime) -> Role | None:
    """The operator's role in the organization if a session of it made at `since` still stands: the
    membership is active and no revocation of the operator's sessions came after it; else None."""
    row = await (await conn.execute(
        f"SELECT m.role FROM rm_operator_orgs m WHERE m.operator_id = %(operator)s AND m.org_id = %(org)s "
        f"AND m.{ACTIVE} AND NOT EXISTS (SELECT 1 FROM rm_operator_revocations r "
        "WHERE r.operator_id = %(operator)s AND r.revoked_before >= %(since)s)",
        {"operator": operator_id, "org": org_id, "since": since})).fetchone()
    return row and row[0]


class OperatorSession(msgspec.Struct, rename={"id": "_id", "created_at": "createdAt", "last_used_at": "lastUsedAt",
                                              "user_agent": "userAgent"}):
    """One of an operator's signed-in sessions (an access token): where it signed in from, when last used."""

    id: uuid.UUID
    created_at: datetime | None  # None for a token issued before sessions were listed
    last_used_at: datetime | None
    user_agent: str | None
    current: bool  # the token of the request that lists them


async def sessions_of(conn: psycopg.AsyncConnection, operator_id: uuid.UUID,
                      current_token_id: uuid.UUID) -> list[OperatorSession]:
    """The operator's sessions that stand (not revoked, not expired), in every organization, newest first."""
    rows = await (await conn.execute(
        "SELECT t.token_id, t.created_at, u.last_used_at, t.user_agent, t.token_id = %s FROM rm_operator_tokens t "
        "LEFT JOIN parley_token_uses u ON u.token_id = t.token_id "
        "WHERE t.operator_id = %s AND NOT t.revoked AND (t.expires_at IS NULL OR t.expires_at > now()) "
        "ORDER BY t.created_at DESC NULLS LAST, t.token_id", (current_token_id, operator_id))).fetchall()
    return [OperatorSession(*row) for row in rows]


async def invitation_pending(conn: psycopg.AsyncConnection, org_id: uuid.UUID, email: str) -> bool:
    """Whether the organization has invited this address already, by a link that still works."""
    row = await (await conn.execute(
        "SELECT 1 FROM rm_invitations WHERE org_id = %s AND email = %s AND state = 'pending' AND expires_at > now()",
        (org_id, email.strip().lower()))).fetchone()
    return row is not None


async def any_operator(conn: psycopg.AsyncConnection) -> bool:
    """Whether the install has an operator: a fresh one offers to create its first owner."""
    return (await (await conn.execute("SELECT EXISTS (SELECT 1 FROM rm_operators)")).fetchone())[0]
