"""Read-your-writes: a read waits, briefly, until the projections it queries have reached the last
position written for the caller's organization, whoever wrote it and through whichever process."""

from __future__ import annotations

import asyncio
import logging

import psycopg

from events.supervision import keep_running
from projections.runner import NOTIFY_CHANNEL, POSITIONS_DDL

log = logging.getLogger("parley.consistency")


class PositionWatch:
    def __init__(self, database_url: str, max_wait: float):
        self.database_url = database_url
        self.max_wait = max_wait
        self.positions: dict[str, int] = {}
        self._changed = asyncio.Condition()
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()

    async def _listen(self) -> None:
        await keep_running("position watch", self._listen_once, log)

    async def _listen_once(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
            await conn.execute(POSITIONS_DDL)
            await self._advance(await (await conn.execute(
                "SELECT name, position FROM parley_projection_positions")).fetchall())
            async for notify in conn.notifies():
                # "name:position,name:position": a group's batch, or one rebuilt read model
                await self._advance([(name, int(position)) for name, _, position in (
                    pair.rpartition(":") for pair in notify.payload.split(","))])

    async def observe(self, positions: dict[str, int]) -> None:
        """Positions reached by a projection runner in this process, told before its notice arrives (or
        instead of it, for a batch it keeps in memory)."""
        await self._advance(list(positions.items()))

    async def _advance(self, reached: list[tuple[str, int]]) -> None:
        # Only forward: a notice may arrive after this process was told of a later position, and a
        # rebuild's reset is never seen (it replays to the end of the store in the same transaction).
        changed = False
        for name, position in reached:
            if position > self.positions.get(name, -1):
                self.positions[name] = position
                changed = True
        if changed:
            async with self._changed:
                self._changed.notify_all()

    async def wait_for(self, position: int, projections: tuple[str, ...] = ("core",)) -> bool:
        """True once every named projection has reached `position`; False after the bounded wait."""
        def reached() -> bool:
            return all(self.positions.get(name, 0) >= position for name in projections)

        if reached():
            return True
        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(reached), self.max_wait)
            return True
        except asyncio.TimeoutError:
            return False
