"""The snooze waker: wakes each snoozed conversation once its time has come.

It finds due conversations in the core read model (`rm_conversations.snoozed_until`, polled at least
every MAX_WAIT_SECONDS and at the next due time) but decides from the conversation's stream: each wake is
`commands.conversations.wake_when_due`, an append at the conversation's next version, taken only while the
stream says the conversation is snoozed until a past time. A wake whose result was lost (the worker killed
after the commit) is found recorded when the stream is loaded again, and two wakers racing are told apart
by the store: the wake is recorded exactly once. One waker leads at a time across processes (the
`snooze-waker` lease, `events.leadership`), like the campaign sender; it needs no NATS.
"""

from __future__ import annotations

import asyncio
import logging

from psycopg_pool import AsyncConnectionPool

from commands.conversations import wake_when_due
from events.leadership import DEFAULT_LEASE_SECONDS, Fence, Lease
from events.store import EventStore
from events.supervision import keep_running
from projections.core import CoreProjection
from projections.runner import ensure_tables
from projections.views.workflow import due_wakes

log = logging.getLogger("parley.snooze")

MAX_WAIT_SECONDS = 1.0
MIN_WAIT_SECONDS = 0.05
BATCH = 100


class Waker:
    def __init__(self, store: EventStore, database_url: str, lease_seconds: float = DEFAULT_LEASE_SECONDS):
        self.store = store
        self.database_url = database_url
        self.lease = Lease(database_url, "snooze-waker", lease_seconds)

    async def run(self) -> None:
        await keep_running("snooze waker", self._run_once, log)

    async def _run_once(self) -> None:
        await self.lease.lead(self._wake_while_leading)

    async def _wake_while_leading(self, _: Fence) -> None:
        async with AsyncConnectionPool(self.database_url, min_size=1, max_size=1, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                await ensure_tables(conn, CoreProjection())
            while True:
                async with pool.connection() as conn:
                    due, wait = await due_wakes(conn, BATCH, MAX_WAIT_SECONDS)
                for org_id, conversation_id in due:
                    if await asyncio.to_thread(wake_when_due, self.store, org_id, conversation_id) is not None:
                        log.info("woke conversation %s", conversation_id)
                # a woken conversation leaves the due ones once the read model applies the wake; until then
                # a second look finds it awake in its stream and records nothing
                await asyncio.sleep(wait if len(due) < BATCH else MIN_WAIT_SECONDS)
