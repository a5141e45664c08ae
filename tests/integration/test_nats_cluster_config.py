"""The stream's configuration across deployments: a comma-separated `PARLEY_NATS_URL` reaches any server
that answers, and the relay's update of an existing stream never weakens it (storage, replicas)."""

from __future__ import annotations

import asyncio
import time
import uuid

from nats.js.api import DiscardPolicy, StorageType, StreamConfig

from events import stream
from tests.support.servers import make_server


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


def test_readiness_reports_what_the_relay_kept_in_a_stream_made_beforehand(infra, tmp_path):
    """A stream made by someone else in memory: the relay keeps it (a stream's storage cannot change) and
    every API process's /readyz says so, while staying ready."""
    name = f"TEST_{uuid.uuid4().hex[:10].upper()}"

    async def make(config: StreamConfig | None = None):
        nc = await stream.connect(infra.nats_url)
        try:
            if config:
                await nc.jetstream().add_stream(config)
            else:
                await nc.jetstream().delete_stream(name)
        finally:
            await stream.close(nc)

    asyncio.run(make(StreamConfig(name=name, subjects=[stream.subject_of(name)], storage=StorageType.MEMORY,
                                  discard=DiscardPolicy.OLD)))
    server = make_server(infra, tmp_path, PARLEY_NATS_STREAM=name).start()
    try:
        with server.client() as http:
            deadline = time.monotonic() + 30
            while not (readiness := http.get("/readyz").json()).get("streamWarnings"):
                assert time.monotonic() < deadline, readiness
                time.sleep(0.2)
        assert readiness["status"] == "ready"
        assert len(readiness["streamWarnings"]) == 1 and "storage" in readiness["streamWarnings"][0]
    finally:
        server.stop()
        asyncio.run(make())
