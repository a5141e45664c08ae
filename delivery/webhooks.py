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
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

import httpx
import psycopg
from psycopg_pool import AsyncConnectionPool

from commands.webhooks import FAILURE_LIMIT, disable_after_failures
from delivery.addresses import RefusedTarget, parse_target, resolve
from parley.settings import Settings
from projections.runner import ensure_tables
from projections.webhooks import WAKE_CHANNEL, WebhookProjection

if TYPE_CHECKING:
    from parley.runtime import Runtime

log = logging.getLogger("parley.webhooks")

RESPONSE_BODY_LIMIT = 1024  # characters of a receiver's answer kept in the log
LEASE_MARGIN_SECONDS = 5.0
MAX_WAIT_SECONDS = 1.0  # a poll now and then finds leases that expired in a dead worker
SWEEP_EVERY_SECONDS = 1.0
USER_AGENT = "Parley-Webhooks/1"


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

    succeeded: bool
    retryable: bool
    latency_ms: int
    response_status: int | None = None
    response_body: str | None = None
    error: str | None = None
    retry_after: float | None = None


def outcome_of_response(response: httpx.Response, latency_ms: int) -> Outcome:
    status = response.status_code
    body = response.text[:RESPONSE_BODY_LIMIT]
    if 200 <= status < 300:
        return Outcome(True, False, latency_ms, status, body)
    if 300 <= status < 400:
        return Outcome(False, False, latency_ms, status, body, "redirects are not followed")
    retryable = status in (408, 429) or status >= 500
    retry_after = parse_retry_after(response.headers.get("retry-after")) if status == 429 else None
    return Outcome(False, retryable, latency_ms, status, body, f"HTTP {status}", retry_after)


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

RECORD = """
UPDATE webhook_deliveries SET attempts = attempts + 1, updated_at = now(),
    status = CASE WHEN %(succeeded)s THEN 'succeeded'
                  WHEN %(retryable)s AND now() + %(delay)s * interval '1 second'
                       <= retry_since + %(window)s * interval '1 second' THEN 'pending'
                  ELSE 'failed' END,
    next_attempt_at = CASE WHEN NOT %(succeeded)s AND %(retryable)s AND now() + %(delay)s * interval '1 second'
                       <= retry_since + %(window)s * interval '1 second'
                      THEN now() + %(delay)s * interval '1 second' END
WHERE id = %(id)s
RETURNING next_attempt_at
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
        self.wake = asyncio.Event()
        self.swept_at = 0.0

    async def run(self) -> None:
        while True:
            try:
                await self._run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("webhook dispatcher failed; restarting")
                await asyncio.sleep(0.5)

    async def _run_once(self) -> None:
        s = self.settings
        limits = httpx.Limits(max_connections=s.webhook_concurrency, max_keepalive_connections=s.webhook_concurrency)
        async with AsyncConnectionPool(self.database_url, min_size=2, max_size=8, open=False,
                                       kwargs={"autocommit": True}) as pool, \
                httpx.AsyncClient(follow_redirects=False, timeout=s.webhook_timeout_seconds, limits=limits,
                                  headers={"User-Agent": USER_AGENT}) as client:
            async with pool.connection() as conn:
                await ensure_tables(conn, WebhookProjection())
            listener = asyncio.create_task(self._listen())
            try:
                while True:
                    self.wake.clear()
                    await self._sweep(pool)
                    free = s.webhook_concurrency - len(self.tasks)
                    claimed = await self._claim(pool, free) if free > 0 else []
                    for row in claimed:
                        self._start(pool, client, row)
                    if claimed and len(claimed) == free:
                        continue
                    waiter = asyncio.create_task(self.wake.wait())
                    await asyncio.wait([waiter, listener], timeout=await self._idle_seconds(pool),
                                       return_when=asyncio.FIRST_COMPLETED)
                    waiter.cancel()
                    if listener.done():
                        listener.result()  # the LISTEN connection died: restart everything
            finally:
                listener.cancel()
                for task in list(self.tasks):
                    task.cancel()
                await asyncio.gather(listener, *self.tasks, return_exceptions=True)

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            await conn.execute(f"LISTEN {WAKE_CHANNEL}")
            self.wake.set()  # anything notified before we listened is found by the next claim
            async for _ in conn.notifies():
                self.wake.set()

    async def _claim(self, pool: AsyncConnectionPool, limit: int) -> list[Claimed]:
        s = self.settings
        lease = 2 * s.webhook_timeout_seconds + LEASE_MARGIN_SECONDS
        async with pool.connection() as conn:
            rows = await (await conn.execute(CLAIM, {
                "per_endpoint": s.webhook_endpoint_concurrency, "failure_limit": FAILURE_LIMIT, "limit": limit,
                "in_flight": json.dumps({str(k): v for k, v in self.in_flight.items() if v}), "lease": lease,
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
        async with pool.connection() as conn:
            await conn.execute(STOP, (FAILURE_LIMIT,))
            overdue = await (await conn.execute(
                "SELECT org_id, id FROM rm_webhook_subscriptions WHERE active AND consecutive_failures >= %s",
                (FAILURE_LIMIT,))).fetchall()
        for org_id, subscription_id in overdue:
            await self._disable(org_id, subscription_id, f"{FAILURE_LIMIT} failed deliveries in a row")

    def _start(self, pool: AsyncConnectionPool, client: httpx.AsyncClient, row: Claimed) -> None:
        self.in_flight[row.subscription_id] += 1
        task = asyncio.create_task(self._deliver(pool, client, row))
        self.tasks.add(task)

        def done(finished: asyncio.Task) -> None:
            self.tasks.discard(finished)
            self.in_flight[row.subscription_id] -= 1
            if not self.in_flight[row.subscription_id]:
                del self.in_flight[row.subscription_id]
            self.wake.set()

        task.add_done_callback(done)

    async def _deliver(self, pool: AsyncConnectionPool, client: httpx.AsyncClient, row: Claimed) -> None:
        outcome = await self.attempt(client, row)
        try:
            await self._record(pool, row, outcome)
        except Exception:
            log.exception("could not record webhook delivery %s; its lease will expire and it is retried",
                          row.delivery_id)

    async def attempt(self, client: httpx.AsyncClient, row: Claimed) -> Outcome:
        s = self.settings
        started = time.monotonic()

        def elapsed() -> int:
            return int((time.monotonic() - started) * 1000)

        try:
            target = parse_target(row.url, allow_private=s.webhook_allow_private)
            address = await resolve(target, allow_private=s.webhook_allow_private)
            host = f"[{address}]" if ":" in address else address
            default_port = 443 if target.scheme == "https" else 80
            timestamp = int(time.time())
            headers = {
                "Host": target.host if target.port == default_port else f"{target.host}:{target.port}",
                "Content-Type": "application/json",
                "X-Service-Event": row.event,
                "X-Service-Signature": sign(row.secret, timestamp, row.body),
                "X-Service-Delivery": str(row.delivery_id),
                "X-Service-Position": str(row.position),
            }
            # Connect to the address just checked; TLS still verifies the certificate for the URL's host.
            extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
            async with asyncio.timeout(s.webhook_timeout_seconds):
                response = await client.post(f"{target.scheme}://{host}:{target.port}{target.path}",
                                             content=row.body, headers=headers, extensions=extensions)
            return outcome_of_response(response, elapsed())
        except RefusedTarget as exc:
            return Outcome(False, True, elapsed(), error=f"refused: {exc}")
        except (TimeoutError, httpx.TimeoutException):
            return Outcome(False, True, elapsed(), error=f"timed out after {s.webhook_timeout_seconds:g} s")
        except httpx.HTTPError as exc:
            return Outcome(False, True, elapsed(), error=f"{type(exc).__name__}: {exc}"[:RESPONSE_BODY_LIMIT])

    async def _record(self, pool: AsyncConnectionPool, row: Claimed, outcome: Outcome) -> None:
        s = self.settings
        delay = retry_delay(s, row.attempts + 1, outcome.retry_after)
        async with pool.connection() as conn, conn.transaction():
            (next_retry,) = await (await conn.execute(RECORD, {
                "succeeded": outcome.succeeded, "retryable": outcome.retryable, "delay": delay,
                "window": s.webhook_retry_window_seconds, "id": row.delivery_id})).fetchone()
            await conn.execute(
                "INSERT INTO webhook_attempts (delivery_id, at, response_status, latency_ms, error, response_body, "
                "next_retry_at) VALUES (%s, now(), %s, %s, %s, %s, %s)",
                (row.delivery_id, outcome.response_status, outcome.latency_ms, outcome.error, outcome.response_body,
                 next_retry))
            counted = await (await conn.execute(
                "UPDATE rm_webhook_subscriptions SET consecutive_failures = "
                "CASE WHEN %s THEN 0 ELSE consecutive_failures + 1 END WHERE id = %s "
                "RETURNING consecutive_failures, active", (outcome.succeeded, row.subscription_id))).fetchone()
        if counted and counted[1] and counted[0] >= FAILURE_LIMIT:
            await self._disable(row.org_id, row.subscription_id,
                                f"{FAILURE_LIMIT} failed deliveries in a row; the last: {outcome.error}")

    async def _disable(self, org_id: uuid.UUID, subscription_id: uuid.UUID, reason: str) -> None:
        position = await asyncio.to_thread(disable_after_failures, self.store, org_id, subscription_id, reason)
        if position is not None:
            log.warning("webhook subscription %s disabled: %s", subscription_id, reason)


def run_dispatcher(runtime: "Runtime"):
    return Dispatcher(runtime).run()
