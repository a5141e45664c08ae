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
slots and never delays the others; a claim leaves out the subscriptions whose slots are all taken and
looks at a bounded window of the oldest due deliveries, so a slow endpoint's backlog costs the claims
little and never fills them. Secrets are opened and IP-literal hosts checked once, not per delivery. New deliveries arrive with a NOTIFY, so a healthy endpoint gets its
event within milliseconds of the commit. The claiming loop does nothing else: attempts are recorded in
batches by one task, the sweep of inactive subscriptions and the disabling of failing ones run in
others, and the requests go through `delivery.http`, a lean keep-alive HTTP/1.1 client.
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
from urllib.parse import quote

import psycopg
from psycopg_pool import AsyncConnectionPool

from commands.webhooks import FAILURE_LIMIT, disable_after_failures
from commands.addresses import RefusedTarget, Target, parse_target, resolve
from delivery.http import Client, HTTPError, Origin
from events.sealing import Sealer
from events.store import EventStore
from events.supervision import keep_running
from projections.runner import ensure_tables
from projections.views.webhook_queue import CLAIM, FAILING, RECORD, STOP
from projections.webhooks import WAKE_CHANNEL, WebhookProjection

log = logging.getLogger("parley.webhooks")

RESPONSE_BODY_LIMIT = 1024  # bytes of a receiver's answer read and kept in the log
LEASE_MARGIN_SECONDS = 5.0
MAX_WAIT_SECONDS = 1.0  # a poll now and then finds leases that expired in a dead worker
CLAIM_COALESCE_SECONDS = 0.01
CLAIM_SCAN_FACTOR = 4  # a claim looks at most this many due deliveries per free slot
RECORD_BATCH = 500
RECORD_COALESCE_SECONDS = 0.02
SWEEP_EVERY_SECONDS = 1.0
USER_AGENT = "Parley-Webhooks/1"
KEEPALIVE_SECONDS = 30.0  # an endpoint with an event every few seconds keeps its connection (and TLS session)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def retry_delay(settings: WebhookSettings, attempt: int, retry_after: float | None = None) -> float:
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


@lru_cache(maxsize=4096)
def cached_target(url: str, allow_private: bool) -> Target:
    """A subscription URL's parts: the same for every delivery, while the address is checked each time."""
    return parse_target(url, allow_private=allow_private)


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
    secret: str  # in the clear: opened when claimed
    attempts: int


@dataclass(frozen=True)
class WebhookSettings:
    """What the dispatcher is told by the composition root (PARLEY_WEBHOOK_*, docs/configuration.md)."""

    webhook_allow_private: bool
    webhook_timeout_seconds: float
    webhook_retry_base_seconds: float
    webhook_retry_cap_seconds: float
    webhook_retry_window_seconds: float
    webhook_concurrency: int
    webhook_endpoint_concurrency: int


class Dispatcher:
    def __init__(self, store: EventStore, database_url: str, settings: WebhookSettings, sealer: Sealer):
        self.settings = settings
        # opens the subscriptions' signing secrets, stored sealed: once per subscription, not per delivery
        self.open_secret = lru_cache(maxsize=4096)(sealer.open)
        self.store = store
        self.database_url = database_url
        self.in_flight: Counter[uuid.UUID] = Counter()
        self.tasks: set[asyncio.Task] = set()
        self.wake = asyncio.Event()  # something may have become claimable
        self.notified = False  # the wake-up was a NOTIFY (new deliveries) or a retry we scheduled
        # Held back by the last claim, so that an ending attempt is worth a new claim only when its slot
        # may release something: every slot of the process was taken, or its subscription was at its cap.
        self.full = False
        self.capped: set[uuid.UUID] = set()
        self.outcomes: asyncio.Queue[tuple[Claimed, Outcome]] = asyncio.Queue()
        self.recording: list[tuple[Claimed, Outcome]] = []  # taken from `outcomes`, being written
        # one keep-alive pool for all endpoints, per origin; TLS context shared (building one is slow)
        self.client = Client(ssl.create_default_context(), keepalive=KEEPALIVE_SECONDS)
        # subscriptions past the failure limit, to disable: id -> (org, reason)
        self.disabling: dict[uuid.UUID, tuple[uuid.UUID, str]] = {}
        self.disable_wake = asyncio.Event()

    async def run(self) -> None:
        await keep_running("webhook dispatcher", self._run_once, log)

    async def _run_once(self) -> None:
        s = self.settings
        async with AsyncConnectionPool(self.database_url, min_size=2, max_size=4, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                await ensure_tables(conn, WebhookProjection())
            helpers = [asyncio.create_task(self._listen()), asyncio.create_task(self._record_batches(pool)),
                       asyncio.create_task(self._sweep(pool)), asyncio.create_task(self._disable_queued())]
            for helper in helpers:
                helper.add_done_callback(lambda _: self.wake.set())
            wait = 0.0
            try:
                while True:
                    self.wake.clear()
                    self.notified = False
                    free = s.webhook_concurrency - len(self.tasks)
                    if free > 0:
                        claimed, wait, window_full = await self._claim(pool, free)
                        for row in claimed:
                            self._start(row)
                        self.full = len(claimed) == free
                        if window_full and claimed and not self.full:
                            wait = 0.0  # more may be due beyond the window looked at: claim again at once
                        self.capped = {k for k, n in self.in_flight.items() if n >= s.webhook_endpoint_concurrency}
                    await self._wait(helpers, wait)
            finally:
                for task in [*helpers, *self.tasks]:
                    task.cancel()
                await asyncio.gather(*helpers, *self.tasks, return_exceptions=True)
                self.client.close_all()
                await self._record_ended(pool)

    async def _record_ended(self, pool: AsyncConnectionPool) -> None:
        """On the way out, records the attempts that ended but were not written yet, so that a graceful
        stop does not leave them to lease expiry (which would deliver them again)."""
        batch, self.recording = self.recording, []  # taken from the queue, not written yet
        while not self.outcomes.empty():
            batch.append(self.outcomes.get_nowait())
        if batch:
            try:
                await asyncio.shield(self._record(pool, batch))  # a subscription past the limit: the sweep disables it
            except Exception:
                log.exception("could not record %d webhook attempts on shutdown", len(batch))

    async def _wait(self, helpers: list[asyncio.Task], seconds: float) -> None:
        """Until new work is notified, an attempt ends that frees a useful slot, or the next pending
        delivery is due (at most MAX_WAIT_SECONDS: a poll finds the expired leases of a dead worker). A
        freed slot is coalesced for a moment with the others ending, so that a busy worker claims in
        batches, not once per response."""
        try:
            async with asyncio.timeout(min(MAX_WAIT_SECONDS, max(0.005, seconds))):
                await self.wake.wait()
        except TimeoutError:
            return
        for helper in helpers:
            if helper.done():
                helper.result()  # a helper died (its connection broke): restart everything
        if not self.notified:  # only freed slots: wait for more of them, or for new deliveries
            try:
                async with asyncio.timeout(CLAIM_COALESCE_SECONDS):
                    while not self.notified:
                        self.wake.clear()
                        await self.wake.wait()
            except TimeoutError:
                pass

    def _notify(self) -> None:
        self.notified = True
        self.wake.set()

    async def _listen(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            await conn.execute(f"LISTEN {WAKE_CHANNEL}")
            self._notify()  # anything notified before we listened is found by the next claim
            async for _ in conn.notifies():
                self._notify()

    async def _claim(self, pool: AsyncConnectionPool, limit: int) -> tuple[list[Claimed], float, bool]:
        """Claims due deliveries; also returns the seconds until the next pending delivery not due yet, and
        whether the window of due deliveries looked at was full (more may be due beyond it)."""
        s = self.settings
        lease = s.webhook_timeout_seconds + LEASE_MARGIN_SECONDS
        async with pool.connection() as conn:
            rows = await (await conn.execute(CLAIM, {
                "per_endpoint": s.webhook_endpoint_concurrency, "failure_limit": FAILURE_LIMIT, "limit": limit,
                "scan": limit * CLAIM_SCAN_FACTOR, "lease": lease,
                "capped": [k for k, n in self.in_flight.items() if n >= s.webhook_endpoint_concurrency],
                "in_flight": json.dumps({str(k): v for k, v in self.in_flight.items()}),
            })).fetchall()
        wait = rows[0][0]
        return ([Claimed(*row[2:9], self.open_secret(row[9]), row[10]) for row in rows if row[2] is not None],
                MAX_WAIT_SECONDS if wait is None else float(wait), bool(rows[0][1]))

    async def _sweep(self, pool: AsyncConnectionPool) -> None:
        """Every SWEEP_EVERY_SECONDS, off the claiming path: stops the pending deliveries of inactive
        subscriptions, queues the disabling of subscriptions that reached the failure limit but whose
        disabling was not recorded (a worker died in between), and closes idle connections."""
        while True:
            self.client.close_idle()
            async with pool.connection() as conn:
                await conn.execute(STOP, (FAILURE_LIMIT,))
                overdue = await (await conn.execute(
                    FAILING,
                    (FAILURE_LIMIT,))).fetchall()
            for org_id, subscription_id in overdue:
                self._queue_disable(org_id, subscription_id, f"{FAILURE_LIMIT} failed deliveries in a row")
            await asyncio.sleep(SWEEP_EVERY_SECONDS)

    def _queue_disable(self, org_id: uuid.UUID, subscription_id: uuid.UUID, reason: str) -> None:
        if subscription_id not in self.disabling:
            self.disabling[subscription_id] = (org_id, reason)
            self.disable_wake.set()

    async def _disable_queued(self) -> None:
        """Appends the WebhookDisabled events one at a time, so that many endpoints failing at once hold
        up neither the claims nor the recording of attempts."""
        while True:
            while not self.disabling:
                self.disable_wake.clear()
                await self.disable_wake.wait()
            subscription_id, (org_id, reason) = next(iter(self.disabling.items()))
            try:
                await self._disable(org_id, subscription_id, reason)
            finally:
                del self.disabling[subscription_id]

    def _start(self, row: Claimed) -> None:
        self.in_flight[row.subscription_id] += 1
        task = asyncio.create_task(self._deliver(row))
        self.tasks.add(task)

        def done(finished: asyncio.Task) -> None:
            self.tasks.discard(finished)
            self.in_flight[row.subscription_id] -= 1
            if not self.in_flight[row.subscription_id]:
                del self.in_flight[row.subscription_id]
            if self.full or row.subscription_id in self.capped:
                self.wake.set()

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
            target = cached_target(row.url, s.webhook_allow_private)
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
        except Exception as exc:  # a fault of ours: logged, and the attempt counts as failed (retried)
            log.exception("webhook attempt %s failed unexpectedly", row.delivery_id)
            return ended(succeeded=False, retryable=True, error=f"internal error: {type(exc).__name__}")

    async def _record_batches(self, pool: AsyncConnectionPool) -> None:
        """Records ended attempts in batches: one statement for everything that ended meanwhile. The first
        outcome waits a moment for others (a burst of deliveries ends within milliseconds), so that a
        busy worker writes a few large batches rather than many small ones."""
        while True:
            self.recording = [await self.outcomes.get()]
            await asyncio.sleep(RECORD_COALESCE_SECONDS)
            while not self.outcomes.empty() and len(self.recording) < RECORD_BATCH:
                self.recording.append(self.outcomes.get_nowait())
            # A stop does not interrupt a write half-way (it would not know whether the write happened):
            # it waits for the write, and `_record_ended` then writes only what is left.
            write = asyncio.ensure_future(self._record(pool, self.recording))
            try:
                to_disable = await asyncio.shield(write)
            except asyncio.CancelledError:
                await asyncio.wait([write])
                if not write.cancelled() and write.exception() is None:
                    self.recording = []
                raise
            except Exception:
                log.exception("could not record %d webhook attempts; their leases expire and they are retried",
                              len(self.recording))
                raise
            if any(o.retryable and not o.succeeded for _, o in self.recording):
                self._notify()  # a retry is scheduled: the dispatcher learns when it is due
            self.recording = []
            for org_id, subscription_id, reason in to_disable:
                self._queue_disable(org_id, subscription_id, reason)

    async def _record(self, pool: AsyncConnectionPool,
                      batch: list[tuple[Claimed, Outcome]]) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
        """Writes the batch; returns the subscriptions that reached the failure limit (org, id, reason)."""
        s = self.settings
        failures: dict[uuid.UUID, list] = {}  # subscription -> [reset, failed since, last error]
        for row, outcome in batch:
            counted = failures.setdefault(row.subscription_id, [False, 0, None])
            if outcome.succeeded:
                counted[:] = [True, 0, None]
            else:
                counted[1] += 1
                counted[2] = outcome.error
        async with pool.connection() as conn:
            counts = await (await conn.execute(RECORD, {
                "ids": [row.delivery_id for row, _ in batch],
                "succeeded": [o.succeeded for _, o in batch], "retryable": [o.retryable for _, o in batch],
                "delays": [retry_delay(s, row.attempts + 1, o.retry_after) for row, o in batch],
                "at": [o.at for _, o in batch], "status": [o.response_status for _, o in batch],
                "latency": [o.latency_ms for _, o in batch], "error": [o.error for _, o in batch],
                "body": [o.response_body for _, o in batch], "window": s.webhook_retry_window_seconds,
                "subscriptions": list(failures), "reset": [c[0] for c in failures.values()],
                "failed": [c[1] for c in failures.values()]})).fetchall()
        return [(org_id, subscription_id, f"{FAILURE_LIMIT} failed deliveries in a row; the last: "
                 f"{failures[subscription_id][2]}")
                for subscription_id, org_id, consecutive, active in counts
                if active and consecutive >= FAILURE_LIMIT]

    async def _disable(self, org_id: uuid.UUID, subscription_id: uuid.UUID, reason: str) -> None:
        position = await asyncio.to_thread(disable_after_failures, self.store, org_id, subscription_id, reason)
        if position is not None:
            log.warning("webhook subscription %s disabled: %s", subscription_id, reason)

