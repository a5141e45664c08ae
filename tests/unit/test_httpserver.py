"""The API's HTTP transport sends what is written in one turn of the event loop as one write: a
response's head and body leave together; a stream's chunks still leave turn by turn; closing sends
what is held first, aborting drops it. Checked on a real socket pair, reading what arrives."""

from __future__ import annotations

import asyncio
import socket

from parley.httpserver import TurnCoalescingTransport


class Idle(asyncio.Protocol):
    """Holds the transport; what the other end receives is counted at the transport."""

    def connection_made(self, transport) -> None:
        self.transport = transport


def scenario(body) -> list[bytes]:
    """Runs `body(transport)` on one end of a real socket pair and returns each write that reached the real
    transport, in order, having checked that the other end received exactly their bytes."""
    ours, theirs = socket.socketpair()
    received: list[bytes] = []

    async def run() -> None:
        loop = asyncio.get_running_loop()
        raw, _ = await loop.connect_accepted_socket(Idle, ours)
        sends: list[bytes] = []
        write = raw.write

        def counted(data: bytes) -> None:
            sends.append(bytes(data))
            write(data)

        raw.write = counted  # what reaches the real transport, one entry per write
        await body(TurnCoalescingTransport(raw, loop))
        await asyncio.sleep(0.05)
        received.extend(sends)
        if not raw.is_closing():
            raw.close()

    try:
        asyncio.run(run())
        theirs.settimeout(1)
        arrived = b""
        while chunk := theirs.recv(65536):
            arrived += chunk
        assert arrived == b"".join(received)
    finally:
        theirs.close()
    return received


def test_a_head_and_a_body_written_in_one_turn_leave_as_one_write():
    async def body(transport) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        await asyncio.sleep(0)
        transport.close()

    assert scenario(body) == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


def test_writes_of_different_turns_leave_turn_by_turn():
    async def body(transport) -> None:
        transport.write(b"head\r\n\r\n")
        await asyncio.sleep(0.01)
        transport.write(b"data: 1\n\n")
        await asyncio.sleep(0.01)
        transport.write(b"data: 2\n\n")
        await asyncio.sleep(0.01)
        transport.close()

    assert scenario(body) == [b"head\r\n\r\n", b"data: 1\n\n", b"data: 2\n\n"]


def test_close_sends_what_is_held_and_abort_drops_it():
    async def closing(transport) -> None:
        transport.write(b"last words")
        transport.close()

    async def aborting(transport) -> None:
        transport.write(b"never sent")
        transport.abort()

    assert scenario(closing) == [b"last words"]
    assert scenario(aborting) == []
