"""Who a presented secret signs in: an API key, an operator token or a visitor's chat session, looked up by
the secret's hash in its read model (`rm_api_keys`, `rm_operator_tokens`, `rm_chat_sessions`)."""

from __future__ import annotations

import psycopg

from commands.principal import ALL_SCOPES, Principal
from events.store import CREDENTIAL_GENERATION
from projections.views.two_factor import must_enrol_sql

# Each lookup also reads the organization's latest write position, as of this moment: what the
# request's reads wait for (read-your-writes), without a query of its own; and the credential generation,
# which tells later requests whether the principal may still be used without a lookup.
ORG_POSITION_COLUMN = "(SELECT position FROM parley_org_positions p WHERE p.org_id = c.org_id)"
GENERATION_COLUMN = f"(SELECT generation FROM {CREDENTIAL_GENERATION})"


async def principal_of(conn: psycopg.AsyncConnection, kind: str, secret_hash: str) -> tuple[Principal, int] | None:
    """The principal whose `kind` of credential ("apikey", "operator" or "chat") has this secret hash, with
    its organization's latest write position; None when none does or it was revoked."""
    if kind == "apikey":
        row = await (await conn.execute(
            f"SELECT id, org_id, scopes, website_id, rate_per_minute, {ORG_POSITION_COLUMN}, {GENERATION_COLUMN} "
            "FROM rm_api_keys c WHERE secret_hash = %s AND NOT revoked", (secret_hash,))).fetchone()
        return row and (Principal("apikey", row[1], row[0], frozenset(row[2]), website_id=row[3],
                                  rate_per_minute=row[4], generation=row[6]), row[5] or 0)
    if kind == "operator":
        row = await (await conn.execute(
            f"SELECT token_id, org_id, operator_id, {ORG_POSITION_COLUMN}, {GENERATION_COLUMN}, expires_at, "
            f"{must_enrol_sql('c.operator_id', 'c.org_id')} "
            "FROM rm_operator_tokens c WHERE token_hash = %s AND NOT revoked "
            "AND (expires_at IS NULL OR expires_at > now())", (secret_hash,))).fetchone()
        return row and (Principal("operator", row[1], row[0], ALL_SCOPES, operator_id=row[2],
                                  generation=row[4], expires_at=row[5], must_enrol=row[6]), row[3] or 0)
    row = await (await conn.execute(
        f"SELECT session_id, org_id, website_id, customer_id, {ORG_POSITION_COLUMN}, {GENERATION_COLUMN} "
        "FROM rm_chat_sessions c WHERE token_hash = %s", (secret_hash,))).fetchone()
    # a visitor holds no scopes: only the routes that accept "chat" credentials let them in
    return row and (Principal("chat", row[1], row[0], frozenset(), website_id=row[2], customer_id=row[3],
                              generation=row[5]), row[4] or 0)
