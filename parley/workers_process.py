"""`role all` as two processes: the API in this one, the background workers in a child.

One Python process runs one thread at a time, so the API's requests, the relay, the projections and
webhook delivery would take turns on one core; a second interpreter lets them run side by side (on two
cores it doubles the write throughput and halves the CPU spent per write). The child is supervised:
restarted if it dies, stopped with the server, and it stops by itself if the server is killed.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal

import msgspec
import uvloop

from parley.settings import Settings
from events.supervision import MAX_RESTART_DELAY, RESTART_DELAY

log = logging.getLogger("parley.workers")

STOP_TIMEOUT = 4.0  # within `parley serve`'s 10 s to stop
PARENT_CHECK_SECONDS = 0.5


class WorkersProcess:
    def __init__(self, settings: Settings, database_url: str, nats_url: str):
        self.settings = msgspec.structs.replace(settings, role="workers", database_url=database_url,
                                                nats_url=nats_url)
        self._context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited loop or locks
        self._process: multiprocessing.process.BaseProcess | None = None
        self._stopping = False

    def start(self) -> None:
        """Starts the child, which boots while the caller gets on with its own start-up."""
        self._ready = self._context.Event()
        self._process = self._context.Process(target=run, args=(self.settings, os.getpid(), self._ready),
                                              name="parley-workers", daemon=True)
        self._process.start()

    async def ready(self) -> None:
        """Returns once the child's workers run."""
        assert self._process is not None
        while not await asyncio.to_thread(self._ready.wait, PARENT_CHECK_SECONDS):
            if not self._process.is_alive():
                raise RuntimeError(f"the workers process exited with {self._process.exitcode} while starting")

    async def supervise(self) -> None:
        """Restarts the child whenever it dies (its state lives in PostgreSQL, so nothing is lost), again
        and again while it cannot start (PostgreSQL down, say), with a growing delay."""
        while True:
            await self._exited()
            if self._stopping:
                return
            log.error("the workers process exited with %s; restarting it", self._process.exitcode)
            delay = RESTART_DELAY
            while True:
                await asyncio.sleep(delay)
                self.start()
                try:
                    await self.ready()
                    break
                except RuntimeError as exc:
                    log.warning("%s; trying again", exc)
                    delay = min(MAX_RESTART_DELAY, delay * 2)

    async def _exited(self) -> None:
        assert self._process is not None
        loop = asyncio.get_running_loop()
        exited = loop.create_future()
        loop.add_reader(self._process.sentinel, lambda: exited.done() or exited.set_result(None))
        try:
            await exited
        finally:
            loop.remove_reader(self._process.sentinel)

    def kill(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()

    def stop(self) -> None:
        self._stopping = True
        if self._process is None or not self._process.is_alive():
            return
        self._process.terminate()
        self._process.join(STOP_TIMEOUT)
        if self._process.is_alive():
            log.warning("the workers process did not stop in %s s; killing it", STOP_TIMEOUT)
            self._process.kill()
            self._process.join()


def run(settings: Settings, parent_pid: int, ready) -> None:
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvloop.run(_work(settings, parent_pid, ready))


async def _work(settings: Settings, parent_pid: int, ready) -> None:
    from parley.runtime import Runtime, prepare_loop

    # Ctrl-C reaches the whole process group; the parent decides when we stop (it terminates us)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = prepare_loop(signal.SIGTERM)
    runtime = Runtime(settings, settings.database_url or "", settings.nats_url or "")
    try:
        await runtime.start_workers()
        ready.set()
        while os.getppid() == parent_pid and not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), PARENT_CHECK_SECONDS)
            except asyncio.TimeoutError:
                pass
    finally:
        await runtime.stop()
