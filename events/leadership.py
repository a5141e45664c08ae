"""Leadership with a lease and a fence: one process at a time does a single-leader role's work (the relay,
a read-model group, the campaign sender), and a leader that stops making progress loses the role within
its lease.

A role's lease is a row of `parley_leases` (name, holder, generation, expires_at, and the holder's
PostgreSQL session). The leader renews it every third of the lease from a connection of its own. A
standby takes the role over, incrementing the generation, when the lease has expired (a frozen or
partitioned leader) or at once when the holder's session is gone (a killed leader, a clean stop).

The generation is the fence: a leader's writes name it, and a stale one is refused (the read models'
positions, `parley_advance_projections`). A leader also refuses itself: it holds the role only until its
own clock says the lease it last renewed is over (`Fence.check`), which comes no later than the expiry
the server sees, so a leader that wakes from a freeze finds its generation stale and steps down before
it writes. Why a lease row rather than the advisory locks used before: docs/decisions.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import Awaitable, Callable

import psycopg

log = logging.getLogger("parley.leadership")

LEASES = "parley_leases"
DEFAULT_LEASE_SECONDS = 10.0
POLL_SECONDS = 1.0  # how often a standby tries to take the role
LEASES_DDL_LOCK = 0x6C6561736573  # "leases": concurrent CREATE TABLE IF NOT EXISTS can collide
DDL = f"""CREATE TABLE IF NOT EXISTS {LEASES} (
    name text PRIMARY KEY, holder text NOT NULL, generation bigint NOT NULL, expires_at timestamptz NOT NULL,
    session_pid integer NOT NULL, session_start timestamptz NOT NULL)"""
# Taken over when expired, or when the holder's session is gone: pid and start time name a session (the
# start time is hidden from another database user without pg_read_all_stats: the pid then decides alone).
ACQUIRE = f"""
INSERT INTO {LEASES} AS l (name, holder, generation, expires_at, session_pid, session_start)
SELECT %(name)s, %(holder)s, 1, clock_timestamp() + %(seconds)s * interval '1 second', pid, backend_start
FROM pg_stat_activity WHERE pid = pg_backend_pid()
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, generation = l.generation + 1,
    expires_at = excluded.expires_at, session_pid = excluded.session_pid, session_start = excluded.session_start
WHERE l.expires_at < clock_timestamp() OR NOT EXISTS (
    SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = l.session_pid
    AND (a.backend_start IS NULL OR a.backend_start = l.session_start))
RETURNING generation"""
RENEW = f"""UPDATE {LEASES} SET expires_at = clock_timestamp() + %(seconds)s * interval '1 second'
WHERE name = %(name)s AND generation = %(generation)s RETURNING 1"""


class LeadershipLost(Exception):
    """This process no longer holds the role: another took it over, or its lease ran out unrenewed."""


class Fence:
    """A leader's hold on its role: the generation its writes name, and how long its own clock says it
    holds the role (the last renewal's start plus the lease)."""

    def __init__(self, name: str, generation: int, seconds: float):
        self.name = name
        self.generation = generation
        self.seconds = seconds
        self.valid_until = 0.0  # on the event loop's monotonic clock

    def renewed(self, sent_at: float) -> None:
        self.valid_until = sent_at + self.seconds

    def check(self) -> None:
        """Raises LeadershipLost once the lease may have expired: called before a write that no fence in
        PostgreSQL guards (the relay's publishing)."""
        if asyncio.get_running_loop().time() >= self.valid_until:
            raise LeadershipLost(f"the lease of {self.name} (generation {self.generation}) ran out unrenewed")


async def connect(database_url: str, seconds: float) -> psycopg.AsyncConnection:
    """A leader's connection: the server closes it when it stays idle (or idle in a transaction) a lease
    long, and TCP keepalives notice a partitioned peer within about a lease, so a frozen or cut-off leader
    does not keep a session (and what it holds) for the two hours of the kernel's default keepalive."""
    probe = max(1, int(seconds / 4))
    conn = await psycopg.AsyncConnection.connect(
        database_url, autocommit=True, keepalives=1, keepalives_idle=probe, keepalives_interval=probe,
        keepalives_count=3, tcp_user_timeout=int(seconds * 1000))
    timeout = int(seconds * 1000)
    await conn.execute(f"SET idle_session_timeout = {timeout}")
    await conn.execute(f"SET idle_in_transaction_session_timeout = {timeout}")
    return conn


class Lease:
    """Runs a role's work while this process holds its lease; `standby` says it waits for the role."""

    def __init__(self, database_url: str, name: str, seconds: float = DEFAULT_LEASE_SECONDS):
        self.database_url = database_url
        self.name = name
        self.seconds = seconds
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.standby = False

    async def lead(self, work: Callable[[Fence], Awaitable[None]]) -> None:
        """Waits for the role, then runs `work` with the fence until it ends, fails (raised) or the role is
        lost (logged, and returns: the caller stands by again). Closing the lease's connection on the way
        out hands the role over at once."""
        async with await connect(self.database_url, self.seconds) as conn:
            await ensure_table(conn)
            loop = asyncio.get_running_loop()
            while True:
                sent_at = loop.time()
                if (generation := await self._acquire(conn)) is not None:
                    break
                self.standby = True
                await asyncio.sleep(POLL_SECONDS)
            self.standby = False
            fence = Fence(self.name, generation, self.seconds)
            fence.renewed(sent_at)
            log.info("%s: leading (generation %s)", self.name, generation)
            working = asyncio.ensure_future(work(fence))
            beating = asyncio.ensure_future(self._heartbeat(conn, fence))
            try:
                await asyncio.wait({working, beating}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (working, beating):
                    task.cancel()
                await asyncio.gather(working, beating, return_exceptions=True)
            try:
                (working if working.done() and not working.cancelled() else beating).result()
            except LeadershipLost as exc:
                log.warning("%s: stepping down: %s", self.name, exc)

    async def _acquire(self, conn: psycopg.AsyncConnection) -> int | None:
        row = await (await conn.execute(ACQUIRE, {"name": self.name, "holder": self.holder,
                                                  "seconds": self.seconds})).fetchone()
        return None if row is None else row[0]

    async def _heartbeat(self, conn: psycopg.AsyncConnection, fence: Fence) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.seconds / 3)
            fence.check()  # a freeze longer than the lease: another may lead by now
            sent_at = loop.time()
            renewed = await (await conn.execute(RENEW, {"name": self.name, "generation": fence.generation,
                                                        "seconds": self.seconds})).fetchone()
            if renewed is None:
                raise LeadershipLost(f"{self.name} was taken over (generation {fence.generation} is stale)")
            fence.renewed(sent_at)


async def ensure_table(conn: psycopg.AsyncConnection) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEASES_DDL_LOCK,))
        await conn.execute(DDL)


async def held_by_another(conn: psycopg.AsyncConnection, member: str) -> bool:
    """Whether a live leader holds a role whose name lists `member` (a read model in `projections:a+b`)."""
    await ensure_table(conn)
    row = await (await conn.execute(
        f"SELECT 1 FROM {LEASES} AS l WHERE %s = ANY(string_to_array(split_part(l.name, ':', 2), '+')) "
        "AND l.expires_at > clock_timestamp() AND EXISTS (SELECT 1 FROM pg_stat_activity AS a "
        "WHERE a.pid = l.session_pid AND (a.backend_start IS NULL OR a.backend_start = l.session_start))",
        (member,))).fetchone()
    return row is not None
