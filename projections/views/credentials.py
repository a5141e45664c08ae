"""Who a presented secret signs in: an API key, an operator token or a visitor's chat session, looked up by
the secret's hash in its read model (`rm_api_keys`, `rm_operator_tokens` with the operator's membership in
`rm_operator_orgs`, `rm_chat_sessions`); and whether the credentials open streams hold still stand."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import NamedTuple

import psycopg

from commands.principal import ALL_SCOPES, Principal
from events.store import CREDENTIAL_GENERATION
from projections.views.identities import OperatorIdentity, identity_of_row, profile_column
from projections.views.two_factor import must_enrol_sql

# Each lookup also reads the organization's latest write position, as of this moment: what the
# request's reads wait for (read-your-writes), without a query of its own; and the credential generation,
# which tells later requests whether the principal may still be used without a lookup.
ORG_POSITION_COLUMN = "(SELECT position FROM parley_org_positions p WHERE p.org_id = c.org_id)"
GENERATION_COLUMN = f"(SELECT generation FROM {CREDENTIAL_GENERATION})"
# A session's last use is written at most once a minute: a token in steady use costs one write a minute,
# not one per request.
STALE_USE = ("NOT EXISTS (SELECT 1 FROM parley_token_uses u WHERE u.token_id = c.token_id "
             "AND u.last_used_at >= now() - interval '1 minute')")
# kind -> (the credentials that stand, as `c`, and their id column): what a lookup finds
STANDING = {
    "apikey": ("rm_api_keys c WHERE NOT c.revoked", "id"),
    # a token stands while its operator's membership of the organization is active
    "operator": ("rm_operator_tokens c JOIN rm_operator_orgs m ON m.operator_id = c.operator_id "
                 "AND m.org_id = c.org_id AND m.status = 'active' WHERE NOT c.revoked "
                 "AND (c.expires_at IS NULL OR c.expires_at > now())", "token_id"),
    "chat": ("rm_chat_sessions c WHERE c.ended_at IS NULL", "session_id"),
}


class Found(NamedTuple):
    """What a credential's lookup finds: its principal; its organization's latest write position; for an
    operator, how their messages name them (`author`), as of the principal's generation, which an
    operator's new display name or avatar moves on (as a revocation does): a message posted for a kept
    principal is answered with its `author`, no query of its own."""

    principal: Principal
    position: int
    author: OperatorIdentity | None = None


async def principal_of(conn: psycopg.AsyncConnection, kind: str, secret_hash: str) -> Found | None:
    """The principal whose `kind` of credential ("apikey", "operator" or "chat") has this secret hash, with
    its organization's latest write position; None when none does or it was revoked."""
    standing_ones = STANDING[kind][0]
    if kind == "apikey":
        row = await (await conn.execute(
            f"SELECT id, org_id, scopes, website_id, rate_per_minute, {ORG_POSITION_COLUMN}, {GENERATION_COLUMN} "
            f"FROM {standing_ones} AND c.secret_hash = %s", (secret_hash,))).fetchone()
        return row and Found(Principal("apikey", row[1], row[0], frozenset(row[2]), website_id=row[3],
                                       rate_per_minute=row[4], generation=row[6]), row[5] or 0)
    if kind == "operator":
        row = await (await conn.execute(
            f"SELECT c.token_id, c.org_id, c.operator_id, {ORG_POSITION_COLUMN}, {GENERATION_COLUMN}, m.role, "
            f"c.expires_at, {STALE_USE}, {must_enrol_sql('c.operator_id', 'c.org_id')}, "
            f"{profile_column('c.operator_id')} FROM {standing_ones} AND c.token_hash = %s", (secret_hash,))).fetchone()
        if row and row[7]:
            await conn.execute("INSERT INTO parley_token_uses (token_id, last_used_at) VALUES (%s, now()) "
                               "ON CONFLICT (token_id) DO UPDATE SET last_used_at = now()", (row[0],))
        return row and Found(Principal("operator", row[1], row[0], ALL_SCOPES, operator_id=row[2],
                                       generation=row[4], role=row[5], expires_at=row[6], must_enrol=row[8]),
                             row[3] or 0, identity_of_row(row[2], row[9]))
    row = await (await conn.execute(
        f"SELECT session_id, org_id, website_id, customer_id, {ORG_POSITION_COLUMN}, {GENERATION_COLUMN} "
        f"FROM {standing_ones} AND c.token_hash = %s", (secret_hash,))).fetchone()
    # a visitor holds no scopes: only the routes that accept "chat" credentials let them in
    return row and Found(Principal("chat", row[1], row[0], frozenset(), website_id=row[2], customer_id=row[3],
                                   generation=row[5]), row[4] or 0)


async def credential_generation(conn: psycopg.AsyncConnection) -> int:
    """The credential generation: every revocation moves it on, in the transaction that records it."""
    return (await (await conn.execute(f"SELECT generation FROM {CREDENTIAL_GENERATION}")).fetchone())[0]


async def standing(conn: psycopg.AsyncConnection, kind: str, ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Those of these credentials of one kind (by id, as `Principal.credential_id`) that still stand: that
    a lookup of their secret would find."""
    credentials, id_column = STANDING[kind]
    rows = await (await conn.execute(f"SELECT c.{id_column} FROM {credentials} AND c.{id_column} = ANY(%s)",
                                     (list(ids),))).fetchall()
    return {row[0] for row in rows}
