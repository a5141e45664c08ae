"""Background loops that outlive infrastructure hiccups (a database restart, a NATS outage)."""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

import psycopg

RESTART_DELAY = 0.5
MAX_RESTART_DELAY = 2.0  # a loop is back within this long of its dependency's return
HEALTHY_RUN_SECONDS = 10.0  # a run that lasted this long was not part of the same outage


async def keep_running(what: str, run_once: Callable[[], Awaitable[None]], log: logging.Logger) -> None:
    """Runs `run_once` until cancelled, starting it again after any error, with a delay that doubles up
    to MAX_RESTART_DELAY while it keeps failing; each start resumes from state kept in PostgreSQL, so a
    restart loses nothing. An outage is logged with its traceback once, then on the 2nd, 4th, 8th...
    failure in a row, not on every retry."""
    loop = asyncio.get_running_loop()
    failures = 0
    while True:
        started = loop.time()
        try:
            await run_once()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures = 1 if loop.time() - started >= HEALTHY_RUN_SECONDS else failures + 1
            if failures == 1:
                log.exception("%s failed; restarting", what)
            elif failures & (failures - 1) == 0:
                log.warning("%s failed %d times in a row (%s: %s); still retrying", what, failures,
                            type(exc).__name__, exc)
            await asyncio.sleep(min(MAX_RESTART_DELAY, RESTART_DELAY * 2 ** (failures - 1)))


async def listen_for_wakes(database_url: str, channel: str, wake: asyncio.Event) -> None:
    """Sets `wake` at each NOTIFY on `channel` (and once on listening: anything notified before is found by
    the worker's next look), until the connection breaks; a worker's polling covers the gap until it
    listens again."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {channel}")
        wake.set()
        async for _ in conn.notifies():
            wake.set()


async def work_when_woken(database_url: str, channel: str, wake: asyncio.Event,
                          look: Callable[[], Awaitable[float]]) -> None:
    """A worker's loop: `look` does what is due and returns the seconds until it should look again (0: at
    once, there may be more); it looks sooner when a NOTIFY on `channel` sets `wake`. Raises when the
    listening connection breaks, so that the worker's supervisor starts it again."""
    listener = asyncio.create_task(listen_for_wakes(database_url, channel, wake))
    listener.add_done_callback(lambda _: wake.set())
    try:
        while True:
            wake.clear()
            wait = await look()
            if wait > 0:
                await woken_or_after(wake, wait)
            if listener.done():
                listener.result()  # its connection broke: start again
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)


async def woken_or_after(wake: asyncio.Event, seconds: float) -> None:
    """Returns once `wake` is set, or after `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            await wake.wait()
    except TimeoutError:
        pass
