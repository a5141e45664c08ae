"""The sweeper of abandoned uploads: a file uploaded but never attached to a message within
`ATTACH_WITHIN` (a day) is removed, its bytes deleted from the attachment store. The removal is recorded
first (`AttachmentRemoved`, the upload's stream at its next version, so two sweepers never both record
it), then the bytes go, unless another attachment holds the same bytes (the embedded store keeps identical
files once). Posting a message refuses an upload older than `ATTACH_WITHIN` (commands/attachments.py),
and the sweeper waits `MARGIN` longer, so no message names a removed file."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta, timezone

import psycopg

from commands.attachments import ATTACH_WITHIN
from events import types as ev
from events.blobs import BlobStore
from events.store import EventStore, Pending, StreamConflict
from events.supervision import keep_running
from projections.views.attachments import abandoned, blob_shared

log = logging.getLogger("parley.attachments")

MARGIN = timedelta(hours=1)
SWEEP_EVERY_SECONDS = 600.0
BATCH = 100


class Sweeper:
    def __init__(self, store: EventStore, database_url: str, blobs: BlobStore,
                 every_seconds: float = SWEEP_EVERY_SECONDS):
        self.store = store
        self.database_url = database_url
        self.blobs = blobs
        self.every_seconds = every_seconds

    async def run(self) -> None:
        await keep_running("attachment sweeper", self._run_once, log)

    async def _run_once(self) -> None:
        while True:
            full = await self.sweep(datetime.now(timezone.utc)) == BATCH
            await asyncio.sleep(1.0 if full else self.every_seconds)  # a full page: more may be waiting

    async def sweep(self, at: datetime) -> int:
        """Removes (at most `BATCH` of) the uploads abandoned as of `at`; how many it looked at."""
        async with await psycopg.AsyncConnection.connect(self.database_url, autocommit=True) as conn:
            rows = await abandoned(conn, at - ATTACH_WITHIN - MARGIN, BATCH)
            for org_id, attachment_id, blob, thumbnail in rows:
                try:
                    await asyncio.to_thread(self.store.append, Pending(attachment_id, 2, ev.AttachmentRemoved(
                        org_id=org_id, at=at, attachment_id=attachment_id, reason="abandoned")))
                except StreamConflict:
                    continue  # another sweeper removed it, and the read model does not show it yet
                for key in filter(None, (blob, thumbnail)):
                    if not await blob_shared(conn, key, attachment_id):
                        await self.blobs.delete(key)
        return len(rows)
