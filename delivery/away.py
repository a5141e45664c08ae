"""The away worker: posts the away replies `projections/hours.py` queued, one per conversation.

Woken by the projection's NOTIFY (and polling every MAX_WAIT_SECONDS), it appends each pending reply as a
message whose id is derived from its conversation (`commands.hours.post_away_reply`): a reply whose append
committed before a kill, or that another worker process posted meanwhile, is refused by the store as a
stream conflict and only marked posted. So it needs no lease: the store makes it exactly once."""

from __future__ import annotations

import asyncio
import logging

from psycopg_pool import AsyncConnectionPool

from commands.hours import post_away_reply
from events.store import EventStore
from events.supervision import keep_running, work_when_woken
from projections.hours import WAKE_CHANNEL, HoursProjection
from projections.runner import ensure_tables
from projections.views.business_hours import away_reply_posted, due_away_replies

log = logging.getLogger("parley.away")

MAX_WAIT_SECONDS = 2.0
BATCH = 100


class AwayReplier:
    def __init__(self, store: EventStore, database_url: str):
        self.store = store
        self.database_url = database_url
        self.wake = asyncio.Event()

    async def run(self) -> None:
        await keep_running("away replies", self._run_once, log)

    async def _run_once(self) -> None:
        async with AsyncConnectionPool(self.database_url, min_size=1, max_size=2, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                await ensure_tables(conn, HoursProjection())
            await work_when_woken(self.database_url, WAKE_CHANNEL, self.wake,
                                  lambda: self._post_then_wait(pool))

    async def _post_then_wait(self, pool: AsyncConnectionPool) -> float:
        return 0 if await self._post_due(pool) else MAX_WAIT_SECONDS

    async def _post_due(self, pool: AsyncConnectionPool) -> int:
        async with pool.connection() as conn:
            due = await due_away_replies(conn, BATCH)
            for conversation_id, org_id, website_id, content in due:
                await asyncio.to_thread(post_away_reply, self.store, org_id, website_id, conversation_id, content)
                await away_reply_posted(conn, conversation_id)
        return len(due)
