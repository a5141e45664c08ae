"""The campaign sender: starts scheduled campaigns on time and sends campaigns batch by batch.

It finds work in the `rm_campaigns` read model (woken by the projection's NOTIFY, and at the next
scheduled time, polling at least every MAX_WAIT_SECONDS), but decides every step from the campaign's
stream in the event store: each step is `commands.campaigns.send_step`, an append at the campaign's
next version, so a step whose result was lost (the worker killed after the commit, PostgreSQL gone
mid-answer) is found recorded when the stream is loaded again, and a step that raced a cancel is refused
by the store. That is what makes a send exactly once per recipient across kills; the sender itself keeps
nothing but a task per campaign. One sender runs at a time across processes (the `campaign-sender`
lease, `events.leadership`; a sender replaced while frozen is fenced by the same stream versions), and it
needs no NATS: the read model it polls and the stream it decides from are both in PostgreSQL.

A send gives way to interactive work: it appends a batch only once the read models have applied the
batch before the last one (`PACED_BY`, at most `BATCHES_AHEAD` batches ahead of them). Without that, the
sender appended a whole audience in a few seconds and every conversation and message written meanwhile
waited in the read models behind the tens of thousands of events it had queued there; paced, the
sender, the relay and the read models take turns with the API instead of all running flat out at once.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import uuid
from datetime import datetime, timezone

from psycopg_pool import AsyncConnectionPool

from commands.campaigns import Campaign, load_campaign, send_step
from events.leadership import DEFAULT_LEASE_SECONDS, Fence, Lease
from events.store import EventStore, StreamConflict
from events.supervision import keep_running, work_when_woken
from projections.campaigns import WAKE_CHANNEL, CampaignsProjection
from projections.runner import current_positions, ensure_tables
from projections.views.campaigns import PENDING, audience_of

log = logging.getLogger("parley.campaigns")

MAX_WAIT_SECONDS = 1.0
AUDIENCE_READ_MODELS = ("core", "chat")  # what the audience query reads: customers, conversations, sessions
CATCH_UP_POLL_SECONDS = 0.02
# The read models a send waits for: the conversations and their messages an operator reads, and the
# campaign's own counts (one group, so one position in practice).
PACED_BY = ("core", "inbox", "campaigns")
BATCHES_AHEAD = 2  # batches appended and not yet applied by PACED_BY: one projected while the next is appended
FINAL = ("sent", "cancelled")  # a campaign in these is never sent to again


class Sender:
    def __init__(self, store: EventStore, database_url: str, batch_size: int,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS):
        self.store = store
        self.database_url = database_url
        self.batch_size = batch_size
        self.wake = asyncio.Event()
        self.sending: dict[uuid.UUID, asyncio.Task] = {}
        # Campaigns found sent or cancelled while the read model may still say sending: not loaded again.
        self.over: set[uuid.UUID] = set()
        self.lease = Lease(database_url, "campaign-sender", lease_seconds)

    async def run(self) -> None:
        await keep_running("campaign sender", self._run_once, log)

    async def _run_once(self) -> None:
        await self.lease.lead(self._send_while_leading)

    async def _send_while_leading(self, _: Fence) -> None:
        async with AsyncConnectionPool(self.database_url, min_size=1, max_size=2, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                await ensure_tables(conn, CampaignsProjection())
            try:
                await work_when_woken(self.database_url, WAKE_CHANNEL, self.wake, lambda: self._start_due(pool))
            finally:
                for task in self.sending.values():
                    task.cancel()
                await asyncio.gather(*self.sending.values(), return_exceptions=True)
                self.sending.clear()
                self.over.clear()

    async def _start_due(self, pool: AsyncConnectionPool) -> float:
        """Starts a task for each campaign that is sending or due; returns the seconds until the next is due."""
        for task in [t for t in self.sending.values() if t.done()]:
            task.result()  # a send that failed (PostgreSQL gone): start again, resuming it
        async with pool.connection() as conn:
            rows = await (await conn.execute(PENDING)).fetchall()
        wait, at = MAX_WAIT_SECONDS, datetime.now(timezone.utc)
        self.over &= {row[0] for row in rows}  # those the read model no longer lists are forgotten
        for campaign_id, org_id, status, scheduled_at in rows:
            if campaign_id in self.over:
                continue
            if status == "scheduled" and scheduled_at > at:
                wait = min(wait, (scheduled_at - at).total_seconds())
                continue
            running = self.sending.get(campaign_id)
            if running is None or running.done():
                if running is not None:
                    running.result()
                self.sending[campaign_id] = asyncio.create_task(self._send(pool, org_id, campaign_id))
        return max(wait, 0.0)

    async def _send(self, pool: AsyncConnectionPool, org_id: uuid.UUID, campaign_id: uuid.UUID) -> None:
        """Steps the campaign on until it is sent, cancelled or not due yet; after a refused step, it loads
        the stream again and decides from what is there. Each step waits for the read models to have
        applied the step `BATCHES_AHEAD` steps back."""
        campaign = await asyncio.to_thread(load_campaign, self.store, org_id, campaign_id)
        appended: collections.deque[int] = collections.deque(maxlen=BATCHES_AHEAD)
        while True:
            audience = await self._audience(pool, campaign) if campaign.recipients is None else None
            if len(appended) == BATCHES_AHEAD:
                await self._applied(pool, PACED_BY, appended[0])
            try:
                progress = await asyncio.to_thread(send_step, self.store, campaign, self.batch_size,
                                                   lambda _: audience)
            except StreamConflict:
                campaign = await asyncio.to_thread(load_campaign, self.store, org_id, campaign_id)
                continue
            if progress.finished:
                if campaign.status in FINAL:
                    self.over.add(campaign_id)
                return
            appended.append(progress.position)

    @staticmethod
    async def _applied(pool: AsyncConnectionPool, read_models: tuple[str, ...], position: int) -> None:
        """Returns once `read_models` have applied the store up to `position`."""
        while True:
            async with pool.connection() as conn:  # not held while sleeping: other campaigns poll too
                if min((await current_positions(conn, read_models)).values()) >= position:
                    return
            await asyncio.sleep(CATCH_UP_POLL_SECONDS)

    async def _audience(self, pool: AsyncConnectionPool, campaign: Campaign) -> list[uuid.UUID] | None:
        """The audience as of now, once the read models it queries hold everything the store holds now;
        None for a campaign that is over. (A scheduled one is resolved even if its stream says it is due a
        little later than the read model did: the step then records nothing, and no send is held up.)"""
        if campaign.status not in ("scheduled", "sending"):
            return None
        await self._applied(pool, AUDIENCE_READ_MODELS, await asyncio.to_thread(self.store.head))
        async with pool.connection() as conn:
            c = campaign.content
            return await audience_of(conn, c.org_id, c.website_id, c.audience)

