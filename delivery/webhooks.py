"""The webhook dispatcher: works the delivery table that the `webhooks` projection fills.

Each process claims due deliveries with `FOR UPDATE SKIP LOCKED`, so several workers cooperate without
delivering a row twice at the same time. A claim is a lease: it moves the row's due time past the
longest an attempt can take, so when a worker dies mid-attempt the row simply becomes due again
(at least once, never lost). Each attempt is recorded; retryable failures (connection errors, timeouts,
408, 429 honouring Retry-After, 5xx) are rescheduled with exponential backoff and jitter until the retry
window is spent; other answers, redirects included, fail at once. Every failed attempt counts toward
the subscription's consecutive failures, every success resets them, and the contract's limit disables
the subscription with an event in the store.

Concurrency is bounded per process and per subscription, so a slow endpoint holds at most its own few
slots and never delays the others. New deliveries arrive with a NOTIFY, so a healthy endpoint gets its
event within milliseconds of the commit.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import random
import ssl
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import quote

import psycopg
from psycopg_pool import AsyncConnectionPool

from commands.webhooks import FAILURE_LIMIT, disable_after_failures
from delivery.addresses import RefusedTarget, Target, parse_target, resolve
from delivery.http import Client, HTTPError, Origin
from parley.settings import Settings
from parley.supervision import keep_running
from projections.runner import ensure_tables
from projections.webhooks import WAKE_CHANNEL, WebhookProjection

if TYPE_CHECKING:
    from parley.runtime import Runtime

log = logging.getLogger("parley.webhooks")

RESPONSE_BODY_LIMIT = 1024  # bytes of a receiver's answer read and kept in the log
LEASE_MARGIN_SECONDS = 5.0
MAX_WAIT_SECONDS = 1.0  # a poll now and then finds leases that expired in a dead worker
CLAIM_COALESCE_SECONDS = 0.01
RECORD_BATCH = 500
SWEEP_EVERY_SECONDS = 1.0
USER_AGENT = "Parley-Webhooks/1"
KEEPALIVE_SECONDS = 30.0  # an endpoint with an event every few seconds keeps its connection (and TLS session)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def retry_delay(settings: Settings, attempt: int, retry_after: float | None = None) -> float:
    """Seconds before the retry that follows failed attempt number `attempt` (1-based): exponential,
    capped, with jitter so that many failures at once do not come back in step."""
    ceiling = min(settings.webhook_retry_cap_seconds, settings.webhook_retry_base_seconds * 2 ** min(attempt - 1, 40))
    delay = ceiling * random.uniform(0.5, 1.0)
    return max(delay, retry_after) if retry_after is not None else delay


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


@dataclass(frozen=True)
class Outcome:
    """One attempt's result, as the log shows it."""

    at: datetime
    succeeded: bool
    retryable: bool
    latency_ms: int
    response_status: int | None = None
    response_body: str | None = None
    error: str | None = None
    retry_after: float | None = None


def outcome_of_response(status: int, retry_after_header: str | None, body: str) -> dict:
    """The Outcome fields a response decides: success, whether to retry, what the log keeps."""
    seen = {"response_status": status, "response_body": body}
    if 200 <= status < 300:
        return {**seen, "succeeded": True, "retryable": False}
    if 300 <= status < 400:
        return {**seen, "succeeded": False, "retryable": False, "error": "redirects are not followed"}
    retry_after = parse_retry_after(retry_after_header) if status == 429 else None
    return {**seen, "succeeded": False, "retryable": status in (408, 429) or status >= 500,
            "error": f"HTTP {status}", "retry_after": retry_after}


# Characters kept as they are in the request target; anything else (spaces, controls, non-ASCII) is
# percent-encoded, so a URL cannot break the request line.
TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~"


@lru_cache(maxsize=4096)
def request_head(target: Target) -> bytes:
    """The request line and the headers that depend only on the URL."""
    default_port = 443 if target.scheme == "https" else 80
    try:
        name = target.host.encode("idna").decode("ascii")
    except UnicodeError:
        raise RefusedTarget("the URL's host is not a valid name") from None
    named = f"[{name}]" if ":" in name else name
    host = named if target.port == default_port else f"{named}:{target.port}"
    return (f"POST {quote(target.path, safe=TARGET_SAFE)} HTTP/1.1\r\nHost: {host}\r\n"
            f"User-Agent: {USER_AGENT}\r\nAccept: */*\r\nContent-Type: application/json\r\n").encode("ascii")


def request_bytes(head: bytes, row: "Claimed", timestamp: int) -> bytes:
    return b"".join((head, (
        f"Content-Length: {len(row.body)}\r\nX-Service-Event: {row.event}\r\n"
        f"X-Service-Signature: {sign(row.secret, timestamp, row.body)}\r\n"
        f"X-Service-Delivery: {row.delivery_id}\r\nX-Service-Position: {row.position}\r\n\r\n").encode("ascii"),
        row.body))


@dataclass(frozen=True)
class Claimed:
    delivery_id: uuid.UUID
    subscription_id: uuid.UUID
    org_id: uuid.UUID
    position: int
    event: str
    body: bytes
    url: str
    secret: str
    attempts: int


CLAIM = """
WITH candidates AS (
    SELECT id FROM (
        SELECT d.id, d.next_attempt_at, d.position,
               row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.next_attempt_at, d.position) AS rank,
               %(per_endpoint)s - COALESCE((%(in_flight)s::jsonb ->> d.subscription_id::text)::int, 0) AS free
        FROM webhook_deliveries d JOIN rm_webhook_subscriptions s ON s.id = d.subscription_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND s.active
          AND s.consecutive_failures < %(failure_limit)s
    ) ranked
    WHERE rank <= free
    ORDER BY next_attempt_at, position
    LIMIT %(limit)s
), locked AS (
    SELECT id FROM webhook_deliveries
    WHERE id IN (SELECT id FROM candidates) AND status = 'pending' AND next_attempt_at <= now()
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d SET next_attempt_at = now() + %(lease)s * interval '1 second'
FROM locked, rm_webhook_subscriptions s
WHERE d.id = locked.id AND s.id = d.subscription_id
RETURNING d.id, d.subscription_id, d.org_id, d.position, d.event, d.body, s.url, s.secret, d.attempts
"""

# One statement records a whole batch of attempts: the deliveries' new state, then (below) the attempts.
RECORD = """
WITH outcome AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(succeeded)s::bool[], %(retryable)s::bool[], %(delays)s::float8[])
        AS o(id, succeeded, retryable, delay)
), decided AS (
    SELECT o.id, o.succeeded, NOT o.succeeded AND o.retryable
           AND now() + o.delay * interval '1 second' <= d.retry_since + %(window)s * interval '1 second' AS again,
           o.delay
    FROM outcome o JOIN webhook_deliveries d ON d.id = o.id
)
UPDATE webhook_deliveries d SET attempts = d.attempts + 1, updated_at = now(),
    status = CASE WHEN decided.succeeded THEN 'succeeded' WHEN decided.again THEN 'pending' ELSE 'failed' END,
    next_attempt_at = CASE WHEN decided.again THEN now() + decided.delay * interval '1 second' END
FROM decided WHERE d.id = decided.id
RETURNING d.id, d.next_attempt_at
"""

RECORD_ATTEMPTS = """
INSERT INTO webhook_attempts (delivery_id, at, response_status, latency_ms, error, response_body, next_retry_at)
SELECT * FROM unnest(%s::uuid[], %s::timestamptz[], %s::int[], %s::int[], %s::text[], %s::text[], %s::timestamptz[])
"""

# Consecutive failures per subscription: a success in the batch resets the count before the failures
# that followed it are added.
COUNT_FAILURES = """
UPDATE rm_webhook_subscriptions s
SET consecutive_failures = CASE WHEN o.reset THEN 0 ELSE s.consecutive_failures END + o.failed
FROM unnest(%s::uuid[], %s::bool[], %s::int[]) AS o(id, reset, failed)
WHERE s.id = o.id
RETURNING s.id, s.org_id, s.consecutive_failures, s.active
"""

# Pending deliveries of a disabled or deleted subscription stop: the log shows them as stopped, and
# `recover` or a retry can deliver them again later.
STOP = """
UPDATE webhook_deliveries d SET status = 'stopped', next_attempt_at = NULL, updated_at = now()
WHERE d.status = 'pending' AND NOT EXISTS (
    SELECT 1 FROM rm_webhook_subscriptions s
    WHERE s.id = d.subscription_id AND s.active AND s.consecutive_failures < %s)
"""


class Dispatcher:
    def __init__(self, runtime: "Runtime"):
        self.settings: Settings = runtime.settings
        self.store = runtime.store
        self.database_url = runtime.database_url
        self.in_flight: Counter[uuid.UUID] = Counter()
        self.tasks: set[asyncio.Task] = set()
        self.new_work = asyncio.Event()  # a NOTIFY: deliveries became due
        self.slot_freed = asyncio.Event()  # an attempt ended: a claim capped by the limits may now succeed
        self.outcomes: asyncio.Queue[tuple[Claimed, Outcome]] = asyncio.Queue()
        # one keep-alive pool for all endpoints, per origin; TLS context shared (building one is slow)
        self.client = Client(ssl.create_default_context(), keepalive=KEEPALIVE_SECONDS)
        self.swept_at = 0.0

    async def run(self) -> None:
        await keep_running("webhook dispatcher", self._run_once, log)

    async def _run_once(self) -> None:
        s = self.settings
        async with AsyncConnectionPool(self.database_url, min_size=2, max_size=4, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                await ensure_tables(conn, WebhookProjection())
            helpers = [asyncio.create_task(self._listen()), asyncio.create_task(self._record_batches(pool))]
            try:
                while True:
                    self.new_work.clear()
                    self.slot_freed.clear()
                    await self._sweep(pool)
                    free = s.webhook_concurrency - len(self.tasks)
                    claimed = await self._claim(pool, free) if free > 0 else []
                    for row in claimed:
                        self._start(row)
                    await self._wait(pool, helpers)
            finally:
                for task in [*helpers, *self.tasks]:
                    task.cancel()
                await asyncio.gather(*helpers, *self.tasks, return_exceptions=True)
                self.client.close_all()
                await self._record_ended(pool)

    async def _record_ended(self, pool: AsyncConnectionPool) -> None:
        """On the way out, records the attempts that ended but were not written yet, so that a graceful
        stop does not leave them to lease expiry (which would deliver them again)."""
        batch = []
        while not self.outcomes.empty():
            batch.append(self.outcomes.get_nowait())
        if batch:
            try:
                await asyncio.shield(self._record(pool, batch))
            except Exception:
                log.exception("could not record %d webhook attempts on shutdown", len(batch))

    async def _wait(self, pool: AsyncConnectionPool, helpers: list[asyncio.Task]) -> None:
        """Until new work is notified, an attempt ends, or the next retry is due; ended attempts are
        coalesced for a moment so that a busy worker claims in batches, not once per response."""
        waiters = [asyncio.create_task(self.new_work.wait()), asyncio.create_task(self.slot_freed.wait())]
        await asyncio.wait([*waiters, *helpers], timeout=await self._idle_seconds(pool),
                           return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()
        for helper in helpers:
            if helper.done():
                helper.result()  # a helper died (its connection broke): restart everything
        if self.slot_freed.is_set() and not self.new_work.is_set():
            await asyncio.sleep(CLAIM_COALESCE_SECONDS)

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            await conn.execute(f"LISTEN {WAKE_CHANNEL}")
            self.new_work.set()  # anything notified before we listened is found by the next claim
            async for _ in conn.notifies():
                self.new_work.set()

    async def _claim(self, pool: AsyncConnectionPool, limit: int) -> list[Claimed]:
        s = self.settings
        lease = s.webhook_timeout_seconds + LEASE_MARGIN_SECONDS
        async with pool.connection() as conn:
            rows = await (await conn.execute(CLAIM, {
                "per_endpoint": s.webhook_endpoint_concurrency, "failure_limit": FAILURE_LIMIT, "limit": limit,
                "in_flight": json.dumps({str(k): v for k, v in self.in_flight.items()}), "lease": lease,
            })).fetchall()
        return [Claimed(*row) for row in rows]

    async def _idle_seconds(self, pool: AsyncConnectionPool) -> float:
        async with pool.connection() as conn:
            row = await (await conn.execute(
                "SELECT EXTRACT(EPOCH FROM min(next_attempt_at) - now()) FROM webhook_deliveries "
                "WHERE status = 'pending'")).fetchone()
        if row[0] is None:
            return MAX_WAIT_SECONDS
        return min(MAX_WAIT_SECONDS, max(0.005, float(row[0])))

    async def _sweep(self, pool: AsyncConnectionPool) -> None:
        """Stops the pending deliveries of inactive subscriptions, and disables subscriptions that reached
        the failure limit but whose disabling was not recorded (a worker died in between)."""
        if time.monotonic() - self.swept_at < SWEEP_EVERY_SECONDS:
            return
        self.swept_at = time.monotonic()
        self.client.close_idle()
        async with pool.connection() as conn:
            await conn.execute(STOP, (FAILURE_LIMIT,))
            overdue = await (await conn.execute(
                "SELECT org_id, id FROM rm_webhook_subscriptions WHERE active AND consecutive_failures >= %s",
                (FAILURE_LIMIT,))).fetchall()
        for org_id, subscription_id in overdue:
            await self._disable(org_id, subscription_id, f"{FAILURE_LIMIT} failed deliveries in a row")

    def _start(self, row: Claimed) -> None:
        self.in_flight[row.subscription_id] += 1
        task = asyncio.create_task(self._deliver(row))
        self.tasks.add(task)

        def done(finished: asyncio.Task) -> None:
            self.tasks.discard(finished)
            self.in_flight[row.subscription_id] -= 1
            if not self.in_flight[row.subscription_id]:
                del self.in_flight[row.subscription_id]
            self.slot_freed.set()

        task.add_done_callback(done)

    async def _deliver(self, row: Claimed) -> None:
        self.outcomes.put_nowait((row, await self.attempt(row)))

    async def attempt(self, row: Claimed) -> Outcome:
        s = self.settings
        started = time.monotonic()

        def ended(**fields) -> Outcome:
            return Outcome(at=datetime.now(timezone.utc), latency_ms=int((time.monotonic() - started) * 1000),
                           **fields)

        try:
            target = parse_target(row.url, allow_private=s.webhook_allow_private)
            address = await resolve(target, allow_private=s.webhook_allow_private)
            request = request_bytes(request_head(target), row, int(time.time()))
            # Connect to the address just checked; TLS still verifies the certificate for the URL's host.
            async with asyncio.timeout(s.webhook_timeout_seconds):
                response = await self.client.post(Origin(target.scheme, address, target.port, target.host), request,
                                                  limit=RESPONSE_BODY_LIMIT)
            return ended(**outcome_of_response(response.status, response.headers.get("retry-after"),
                                               response.body.decode(errors="replace")))
        except RefusedTarget as exc:
            return ended(succeeded=False, retryable=True, error=f"refused: {exc}")
        except TimeoutError:
            return ended(succeeded=False, retryable=True, error=f"timed out after {s.webhook_timeout_seconds:g} s")
        except HTTPError as exc:
            return ended(succeeded=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:RESPONSE_BODY_LIMIT])

    async def _record_batches(self, pool: AsyncConnectionPool) -> None:
        """Records ended attempts in batches: one transaction for everything that ended meanwhile."""
        while True:
            batch = [await self.outcomes.get()]
            while not self.outcomes.empty() and len(batch) < RECORD_BATCH:
                batch.append(self.outcomes.get_nowait())
            try:
                await self._record(pool, batch)
            except Exception:
                log.exception("could not record %d webhook attempts; their leases expire and they are retried",
                              len(batch))
                raise

    async def _record(self, pool: AsyncConnectionPool, batch: list[tuple[Claimed, Outcome]]) -> None:
        s = self.settings
        failures: dict[uuid.UUID, list] = {}  # subscription -> [reset, failed since, last error]
        for row, outcome in batch:
            counted = failures.setdefault(row.subscription_id, [False, 0, None])
            if outcome.succeeded:
                counted[:] = [True, 0, None]
            else:
                counted[1] += 1
                counted[2] = outcome.error
        async with pool.connection() as conn, conn.transaction():
            next_retries = dict(await (await conn.execute(RECORD, {
                "ids": [row.delivery_id for row, _ in batch],
                "succeeded": [o.succeeded for _, o in batch], "retryable": [o.retryable for _, o in batch],
                "delays": [retry_delay(s, row.attempts + 1, o.retry_after) for row, o in batch],
                "window": s.webhook_retry_window_seconds})).fetchall())
            await conn.execute(RECORD_ATTEMPTS, (
                [row.delivery_id for row, _ in batch], [o.at for _, o in batch],
                [o.response_status for _, o in batch], [o.latency_ms for _, o in batch],
                [o.error for _, o in batch], [o.response_body for _, o in batch],
                [next_retries.get(row.delivery_id) for row, _ in batch]))
            counts = await (await conn.execute(COUNT_FAILURES, (
                list(failures), [c[0] for c in failures.values()], [c[1] for c in failures.values()]))).fetchall()
        for subscription_id, org_id, consecutive, active in counts:
            if active and consecutive >= FAILURE_LIMIT:
                await self._disable(org_id, subscription_id,
                                    f"{FAILURE_LIMIT} failed deliveries in a row; the last: {failures[subscription_id][2]}")

    async def _disable(self, org_id: uuid.UUID, subscription_id: uuid.UUID, reason: str) -> None:
        position = await asyncio.to_thread(disable_after_failures, self.store, org_id, subscription_id, reason)
        if position is not None:
            log.warning("webhook subscription %s disabled: %s", subscription_id, reason)


def run_dispatcher(runtime: "Runtime"):
    return Dispatcher(runtime).run()
