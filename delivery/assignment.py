"""The assigner: gives each new conversation of a website that assigns automatically to an online operator
below their capacity (round-robin or least-busy, projections' `choose_assignee`), and an unassigned
conversation to the operator who replied in it when the website lets a reply take it.

Race-free and deterministic by construction: one assigner runs at a time across processes (the `assigner`
lease, events.leadership), it takes the waiting conversations oldest first, and before each round it waits
until the read models it counts from (core's assignees, the assignment model's queue and cursors) hold
everything the store held when the round began, its own earlier appends included; within a round it
counts its own appends itself. Each append is decided on the conversation's stream
(`commands.assignment.assign_if_unassigned`), so a conversation is assigned once, whoever else writes to it
meanwhile and whatever an assigner that lost its lease still sends. A conversation nobody may take waits
(in the read model) until someone comes online or frees capacity: it is tried again when the projection
says something changed, and at least every `MAX_WAIT_SECONDS` (activity at the dashboard is not an event).
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from psycopg_pool import AsyncConnectionPool

from commands.assignment import assign_if_unassigned
from commands.deciders.assignment import choose_assignee
from events import types as ev
from events.leadership import DEFAULT_LEASE_SECONDS, Fence, Lease
from events.store import EventStore
from events.supervision import keep_running, work_when_woken
from projections.assignment import WAKE_CHANNEL, AssignmentProjection
from projections.runner import current_positions, ensure_tables
from projections.views.assignment import Waiting, candidates, waiting

log = logging.getLogger("parley.assignment")

MAX_WAIT_SECONDS = 1.0
ROUND = 500  # conversations taken per round
READ_MODELS = ("core", "assignment")
CATCH_UP_POLL_SECONDS = 0.02


class Assigner:
    def __init__(self, store: EventStore, database_url: str, lease_seconds: float = DEFAULT_LEASE_SECONDS):
        self.store = store
        self.database_url = database_url
        self.wake = asyncio.Event()
        self.lease = Lease(database_url, "assigner", lease_seconds)

    async def run(self) -> None:
        await keep_running("assigner", self._run_once, log)

    async def _run_once(self) -> None:
        await self.lease.lead(self._assign_while_leading)

    async def _assign_while_leading(self, _: Fence) -> None:
        async with AsyncConnectionPool(self.database_url, min_size=1, max_size=2, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                await ensure_tables(conn, AssignmentProjection())
            # after a round that appended, the next looks at once: it first sees these appends counted
            await work_when_woken(self.database_url, WAKE_CHANNEL, self.wake,
                                  lambda: self._round_then_wait(pool))

    async def _round_then_wait(self, pool: AsyncConnectionPool) -> float:
        return 0 if await self.assign_round(pool) else MAX_WAIT_SECONDS

    async def assign_round(self, pool: AsyncConnectionPool) -> bool:
        """Assigns what it can of the waiting conversations; whether it appended anything."""
        head = await asyncio.to_thread(self.store.head)
        async with pool.connection() as conn:
            while min((await current_positions(conn, READ_MODELS)).values()) < head:
                await asyncio.sleep(CATCH_UP_POLL_SECONDS)
            found = await waiting(conn, ROUND)
            pools: dict[tuple[uuid.UUID, uuid.UUID | None], tuple[list[uuid.UUID], dict[uuid.UUID, int]]] = {}
            for conversation in found:
                if conversation.claim_by is None and (conversation.org_id, conversation.team_id) not in pools:
                    pools[conversation.org_id, conversation.team_id] = await candidates(conn, conversation.org_id,
                                                                                         conversation.team_id)
        cursors = {c.website_id: c.last for c in found}
        appended = False
        for conversation in found:
            if conversation.claim_by is not None:
                appended |= await self._assign(conversation, conversation.claim_by, None,
                                               ev.Actor("operator", conversation.claim_by))
                continue
            online, counts = pools[conversation.org_id, conversation.team_id]
            chosen = choose_assignee(conversation.mode, online, counts, conversation.capacity,
                                     cursors[conversation.website_id])
            if chosen is not None and await self._assign(conversation, chosen, conversation.team_id, None):
                counts[chosen] = counts.get(chosen, 0) + 1
                cursors[conversation.website_id] = chosen
                appended = True
        return appended

    async def _assign(self, conversation: Waiting, operator_id: uuid.UUID, team_id: uuid.UUID | None,
                      actor: ev.Actor | None) -> bool:
        position = await asyncio.to_thread(assign_if_unassigned, self.store, conversation.org_id,
                                           conversation.conversation_id, operator_id, team_id, actor)
        return position is not None
