"""Operator sign-in by e-mail and password, as the REST API (`POST /api/operators/sessions`) and the MCP
consent page share it: the password check, which costs the same for an address no operator has, and the
per-account backoff.

Each attempt for an address is counted before its password is checked (so parallel guesses are counted
too), in a window of `FAILURE_WINDOW` from the first; past `failures_allowed` the address is refused until
the window ends, whoever asks and whatever the password. A second-factor code is an attempt too (the
consent page's code step counts one with `attempt_second_factor`), and only a whole successful sign-in
(`signed_in`: the password, and the code of an operator with two-factor sign-in) clears the count, so the
six digits cannot be guessed at the pace of the right password. Addresses
no operator has are counted alike, so a refusal does not tell them apart. The counts live in PostgreSQL,
so the backoff holds across API processes."""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from datetime import timedelta

from psycopg_pool import AsyncConnectionPool

from commands.admin import password_matches
from projections.runner import lock_key
from projections.views.operators import SigningIn, operator_by_email

FAILURE_WINDOW = timedelta(minutes=15)
SWEEP_ONE_IN = 100  # attempts: one in so many also deletes the ended windows

DDL = ("CREATE TABLE IF NOT EXISTS parley_signin_attempts ("
       "email text PRIMARY KEY, window_start timestamptz NOT NULL, attempts integer NOT NULL)")
COUNT = """
INSERT INTO parley_signin_attempts AS a (email, window_start, attempts) VALUES (%(email)s, now(), 1)
ON CONFLICT (email) DO UPDATE SET
    window_start = CASE WHEN a.window_start + %(window)s <= now() THEN now() ELSE a.window_start END,
    attempts = CASE WHEN a.window_start + %(window)s <= now() THEN 1 ELSE a.attempts + 1 END
RETURNING a.attempts, extract(epoch FROM a.window_start + %(window)s - now())::float8
"""
SWEEP = "DELETE FROM parley_signin_attempts WHERE window_start + %s <= now()"


class TooManyFailures(Exception):
    """The address failed to sign in too often lately; it may try again in `retry_after` seconds."""

    def __init__(self, failures_allowed: int, retry_after: int):
        super().__init__(f"more than {failures_allowed} failed sign-ins for this e-mail address within "
                         f"{FAILURE_WINDOW.seconds // 60} minutes; retry in {retry_after} s")
        self.retry_after = retry_after


_ready: set[tuple] = set()  # the databases whose table exists


async def attempt_sign_in(pool: AsyncConnectionPool, email: str, password: str, failures_allowed: int) -> SigningIn | None:
    """The operator the address and password sign in, or None; TooManyFailures while the address is held
    back (its password is then not checked at all). The attempt stays counted until `signed_in`."""
    address = email.strip().lower()
    async with pool.connection() as conn:
        await _ensure_table(conn)
        await _count(conn, address, failures_allowed)
        found = await operator_by_email(conn, address)
    # off the event loop: Argon2 takes a while, for an unknown address too (against a dummy hash)
    if not await asyncio.to_thread(password_matches, found.password_hash if found else None, password):
        return None
    return found


async def attempt_second_factor(pool: AsyncConnectionPool, operator_id: uuid.UUID, failures_allowed: int) -> None:
    """Counts a try of the operator's second factor as an attempt of their address; TooManyFailures while
    the address is held back (the code is then not checked at all)."""
    async with pool.connection() as conn:
        await _ensure_table(conn)
        row = await (await conn.execute("SELECT email FROM rm_operators WHERE id = %s", (operator_id,))).fetchone()
        if row:
            await _count(conn, row[0], failures_allowed)


async def signed_in(pool: AsyncConnectionPool, operator_id: uuid.UUID) -> None:
    """The whole sign-in passed: the address's failures are forgotten."""
    async with pool.connection() as conn:
        await _ensure_table(conn)
        await conn.execute("DELETE FROM parley_signin_attempts WHERE email = "
                           "(SELECT email FROM rm_operators WHERE id = %s)", (operator_id,))


async def _count(conn, address: str, failures_allowed: int) -> None:
    attempts, seconds_left = await (await conn.execute(
        COUNT, {"email": address, "window": FAILURE_WINDOW})).fetchone()
    if random.randrange(SWEEP_ONE_IN) == 0:
        await conn.execute(SWEEP, (FAILURE_WINDOW,))
    if attempts > failures_allowed:
        raise TooManyFailures(failures_allowed, max(1, math.ceil(seconds_left)))


async def _ensure_table(conn) -> None:
    where = (conn.info.host, conn.info.port, conn.info.dbname)
    if where not in _ready:
        async with conn.transaction():  # concurrent CREATE IF NOT EXISTS can collide, so serialize it
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("ddl"),))
            await conn.execute(DDL)
        _ready.add(where)
