"""Rate limits: one fixed window of `WINDOW_SECONDS` per credential (or per client address without one),
counted in PostgreSQL so the limit holds across every API process, yet without a round trip per request.

Each process leases tokens from the shared window row in one statement (`INSERT ... ON CONFLICT DO
UPDATE ... RETURNING`) and spends them locally. A lease is at most a tenth of what the window has left,
and a single token once fewer than ten are left, so the processes together never admit more than the
quota, and tokens stranded in an idle process are few and end with the window. Once the shared count
reaches the quota, a process answers 429 from memory until the window ends: a flood costs nothing.
The window starts at a bucket's first request and is timed by the database clock, so processes agree.
The table is UNLOGGED: counters are worth losing in a crash, not worth a WAL write per lease."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from datetime import timedelta

from psycopg_pool import AsyncConnectionPool

from commands.principal import Principal
from projections.runner import lock_key
from readapi.clientaddress import limit_key
from readapi.services import ApiSettings

WINDOW_SECONDS = 60
LEASE_FRACTION = 10  # a lease takes at most 1/LEASE_FRACTION of what is left of the window
SWEEP_EVERY = 1000  # leases between sweeps of finished windows, in memory and in the table

DDL = ("CREATE UNLOGGED TABLE IF NOT EXISTS parley_rate_windows ("
       "bucket text PRIMARY KEY, window_start timestamptz NOT NULL, used integer NOT NULL)")
LEASE = """
INSERT INTO parley_rate_windows AS w (bucket, window_start, used) VALUES (%(bucket)s, now(), %(want)s)
ON CONFLICT (bucket) DO UPDATE SET
    window_start = CASE WHEN w.window_start + %(window)s <= now() THEN now() ELSE w.window_start END,
    used = CASE WHEN w.window_start + %(window)s <= now() THEN %(want)s ELSE w.used + %(want)s END
RETURNING w.used, extract(epoch FROM w.window_start + %(window)s - now())::float8
"""
SWEEP = "DELETE FROM parley_rate_windows WHERE window_start + %s <= now()"


@dataclass(frozen=True)
class Policy:
    name: str
    quota: int  # requests per window


@dataclass(frozen=True)
class Decision:
    policy: Policy
    allowed: bool
    remaining: int
    reset_seconds: int

    def headers(self) -> list[tuple[bytes, bytes]]:
        """`RateLimit-Policy` and `RateLimit` as structured fields (draft-ietf-httpapi-ratelimit-headers-10),
        and `Retry-After` when refused."""
        name = self.policy.name
        headers = [(b"ratelimit-policy", f'"{name}";q={self.policy.quota};w={WINDOW_SECONDS}'.encode()),
                   (b"ratelimit", f'"{name}";r={self.remaining};t={self.reset_seconds}'.encode())]
        if not self.allowed:
            headers.append((b"retry-after", str(self.reset_seconds).encode()))
        return headers


def policy_for(principal: Principal | None, settings: ApiSettings) -> Policy:
    """An API key's own rate or the API-key default; the operator default; anonymous for the rest (no
    or an invalid credential, the sandbox) and for a visitor's chat session."""
    if principal is None:
        return Policy("anonymous", settings.rate_anonymous_per_minute)
    if principal.kind == "apikey":
        return Policy("apikey", principal.rate_per_minute or settings.rate_apikey_per_minute)
    if principal.kind == "operator":
        return Policy("operator", settings.rate_operator_per_minute)
    return Policy("chat", settings.rate_anonymous_per_minute)


def sign_in_limit(client_address: str, settings: ApiSettings) -> tuple[str, Policy]:
    """The bucket and policy of a POST to the OAuth endpoints, apart from the /api/ buckets: a guesser
    at the sign-in form spends their own address's budget, and nobody else's."""
    return f"signin:{limit_key(client_address)}", Policy("signin", settings.rate_signin_per_minute)


def chat_sessions_limit(client_address: str, settings: ApiSettings) -> tuple[str, Policy]:
    """The bucket and policy of starting a chat session: each session has a budget of its own, so the
    address that starts them is bounded apart, or it would multiply its allowance by starting more."""
    return f"chatsessions:{limit_key(client_address)}", Policy("chatsessions", settings.rate_chat_sessions_per_minute)


def bucket_for(principal: Principal | None, client_address: str) -> str:
    return f"{principal.kind}:{principal.credential_id}" if principal else f"address:{limit_key(client_address)}"


@dataclass
class _Lease:
    """This process's share of one bucket's current window."""

    deadline: float = 0.0  # monotonic time the window ends; 0 before the first lease
    shared_used: int = 0  # the window's shared count as of our last lease
    tokens: int = 0  # leased and not yet spent
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def ended(self, now: float) -> bool:
        return now >= self.deadline


class RateLimiter:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool
        self.leases: dict[str, _Lease] = {}
        self.table_ready = False
        self.leased = 0

    async def hit(self, bucket: str, policy: Policy) -> Decision:
        """Counts one request against the bucket's window and says whether it may proceed."""
        lease = self.leases.get(bucket) or self.leases.setdefault(bucket, _Lease())
        if not lease.tokens or lease.ended(time.monotonic()):
            async with lease.lock:
                if lease.ended(time.monotonic()):
                    lease.tokens = 0  # unspent tokens end with their window
                if not lease.tokens and (lease.ended(time.monotonic()) or lease.shared_used < policy.quota):
                    await self._lease(bucket, lease, policy.quota)
        allowed = lease.tokens > 0
        if allowed:
            lease.tokens -= 1
        remaining = max(0, policy.quota - lease.shared_used) + lease.tokens
        reset = max(1, math.ceil(lease.deadline - time.monotonic()))
        return Decision(policy, allowed, remaining, reset)

    async def _lease(self, bucket: str, lease: _Lease, quota: int) -> None:
        left = quota if lease.ended(time.monotonic()) else quota - lease.shared_used
        want = max(1, left // LEASE_FRACTION)
        window = timedelta(seconds=WINDOW_SECONDS)
        async with self.pool.connection() as conn:
            if not self.table_ready:
                await self._create_table(conn)
            used, seconds_left = await (await conn.execute(
                LEASE, {"bucket": bucket, "want": want, "window": window})).fetchone()
            self.leased += 1
            if self.leased % SWEEP_EVERY == 0:
                await conn.execute(SWEEP, (window,))
                self._forget_ended()
        lease.tokens = max(0, min(want, quota - (used - want)))
        lease.shared_used = used
        lease.deadline = time.monotonic() + seconds_left

    async def _create_table(self, conn) -> None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("ddl"),))
            await conn.execute(DDL)
        self.table_ready = True

    def _forget_ended(self) -> None:
        now = time.monotonic()
        for bucket in [b for b, lease in self.leases.items() if lease.ended(now) and not lease.lock.locked()]:
            del self.leases[bucket]
