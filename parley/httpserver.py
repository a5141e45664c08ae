"""How the API's HTTP connections write: uvicorn's httptools protocol, with a response's head and body
sent together.

Uvicorn writes a response's status line and headers with one `transport.write` and its body with
another, back to back; uvloop sends each at once, so every response cost two send calls and woke the
client twice (it reads the head, then waits for the body). Writes made in the same turn of the event
loop now leave as one: one send per response, and half the wake-ups of the client on the same machine.
A streamed response (server-sent events) still leaves chunk by chunk, each at the end of its turn.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class TurnCoalescingTransport:
    """A transport whose writes wait for the end of the event loop's turn, then go as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(data)

    def flush(self) -> None:
        if not self._held:
            return
        data = b"".join(self._held)
        self._held.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held.clear()
        self._transport.abort()

    def __getattr__(self, name: str):
        return getattr(self._transport, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(TurnCoalescingTransport(transport, self.loop))  # type: ignore[arg-type]
