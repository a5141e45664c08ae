"""Reading two-factor sign-in (`rm_operator_two_factor`, `rm_organization_security`): whether an operator
has it on, whether an organization requires it, and so whether an operator must enrol before doing anything
else there. The secret is not here: it stays in the operator's stream."""

from __future__ import annotations

import uuid

import msgspec
import psycopg


def must_enrol_sql(operator: str, org: str) -> str:
    """SQL that is true when the organization `org` requires two-factor sign-in and the operator `operator`
    has none (both SQL expressions)."""
    return (f"(COALESCE((SELECT s.require_two_factor FROM rm_organization_security s WHERE s.org_id = {org}), "
            f"false) AND NOT EXISTS (SELECT 1 FROM rm_operator_two_factor t WHERE t.operator_id = {operator}))")


class TwoFactorStatus(msgspec.Struct, rename="camel"):
    """The operator's two-factor sign-in, and whether the organization of the token requires it."""

    enrolled: bool
    required: bool


async def two_factor_status(conn: psycopg.AsyncConnection, operator_id: uuid.UUID,
                            org_id: uuid.UUID) -> TwoFactorStatus:
    row = await (await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM rm_operator_two_factor WHERE operator_id = %s), "
        "COALESCE((SELECT require_two_factor FROM rm_organization_security WHERE org_id = %s), false)",
        (operator_id, org_id))).fetchone()
    return TwoFactorStatus(*row)


async def must_enrol(conn: psycopg.AsyncConnection, operator_id: uuid.UUID, org_id: uuid.UUID) -> bool:
    row = await (await conn.execute(f"SELECT {must_enrol_sql('%(operator)s', '%(org)s')}",
                                    {"operator": operator_id, "org": org_id})).fetchone()
    return row[0]
