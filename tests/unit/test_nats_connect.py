"""Connecting to a NATS that is down fails within seconds (nats-py retries a failed connect inside
`connect` every 2 s, 60 times, by default), so the consumers turn to the event store at once."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from events.stream import CONNECT_SECONDS, connect
from parley.embedded import free_port

# Two attempts of CONNECT_SECONDS each at most, and the slack of a busy shared machine.
BOUND = 2 * CONNECT_SECONDS + 2.0


async def seconds_to_fail(url: str) -> float:
    started = time.monotonic()
    with pytest.raises(Exception):
        # the outer bound only keeps the test from hanging for two minutes when the fix is missing
        await asyncio.wait_for(connect(url), 30)
    return time.monotonic() - started


def test_a_refused_connection_fails_at_once():
    assert asyncio.run(seconds_to_fail(f"nats://127.0.0.1:{free_port()}")) < BOUND


def test_a_server_that_never_greets_fails_within_the_connect_timeout():
    with socket.socket() as silent:  # accepts connections (the kernel does) and never says INFO
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        assert asyncio.run(seconds_to_fail(f"nats://127.0.0.1:{silent.getsockname()[1]}")) < BOUND
