"""Background loops that outlive infrastructure hiccups (a database restart, a NATS reconnect)."""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

RESTART_DELAY = 0.5


async def keep_running(what: str, run_once: Callable[[], Awaitable[None]], log: logging.Logger) -> None:
    """Runs `run_once` until cancelled, starting it again after any error; each start resumes from
    state kept in PostgreSQL, so a restart loses nothing."""
    while True:
        try:
            await run_once()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s failed; restarting", what)
            await asyncio.sleep(RESTART_DELAY)
