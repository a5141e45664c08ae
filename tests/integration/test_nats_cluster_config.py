"""The stream's configuration across deployments: a comma-separated `PARLEY_NATS_URL` reaches any server
that answers, and the relay's update of an existing stream never weakens it (storage, replicas)."""

from __future__ import annotations

import asyncio
import uuid

from nats.js.api import DiscardPolicy, StorageType, StreamConfig

from events import stream


def test_a_comma_separated_url_connects_to_a_server_that_answers(infra):
    async def check() -> bool:
        nc = await stream.connect(f"nats://127.0.0.1:1, {infra.nats_url}")  # the first refuses
        try:
            return nc.is_connected
        finally:
            await stream.close(nc)

    assert asyncio.run(check())


def test_an_update_keeps_a_stronger_stream_and_says_so(infra):
    name = f"TEST_{uuid.uuid4().hex[:10].upper()}"

    async def check():
        nc = await stream.connect(infra.nats_url)
        js = nc.jetstream()
        try:
            # made beforehand by someone else, in memory and with another message limit
            await js.add_stream(StreamConfig(name=name, subjects=[stream.subject_of(name)],
                                             storage=StorageType.MEMORY, max_msgs=10, discard=DiscardPolicy.OLD))
            mismatches = await stream.ensure_stream(js, name, 100, replicas=1)
            return mismatches, (await js.stream_info(name)).config
        finally:
            await js.delete_stream(name)
            await stream.close(nc)

    mismatches, config = asyncio.run(check())
    assert config.max_msgs == 100  # the relay's limit is set
    assert config.storage == StorageType.MEMORY  # not rewritten
    assert len(mismatches) == 1 and "storage" in mismatches[0] and "kept" in mismatches[0]
