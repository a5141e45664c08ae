"""A lean HTTP/1.1 client for webhook deliveries: one POST per exchange, keep-alive connections pooled
per origin, no redirects, no content decoding, only the start of an answer kept.

httpx spent about a millisecond of CPU per delivery (its request model, anyio, the pool's
scans, a log record per request) in the process that also runs the API and the projections. Here a
connection is an `asyncio.Protocol`: the request goes out in one write and the answer is parsed from
the bytes as they arrive, a few microseconds of Python per delivery.

An origin is the scheme, the address that the caller checked (see `commands.addresses`), the port and
the URL's host name (TLS verifies the certificate for that name), so a connection is only reused for a
destination that was checked in the same way. Time limits are the caller's (`asyncio.timeout` around
`post`): a connection whose exchange is cut short is closed, never reused.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from typing import NamedTuple

MAX_HEAD_BYTES = 64 * 1024  # status line and headers of an answer
MAX_LINE_BYTES = 4096  # a chunk-size line or a trailer line
HEX_DIGITS = b"0123456789abcdefABCDEF"


class HTTPError(Exception):
    """The exchange failed before a complete answer (the class name says at which step)."""


class ConnectError(HTTPError):
    pass


class RemoteProtocolError(HTTPError):
    pass


class ReadError(HTTPError):
    pass


class Origin(NamedTuple):
    scheme: str  # http or https
    address: str  # the checked IP address to connect to
    port: int
    host: str  # the URL's host: TLS server name


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    body: bytes  # at most the parser's limit: the start of the answer


HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, TRAILERS, UNTIL_CLOSE, DONE = range(8)


class ResponseParser:
    """Reads one HTTP/1.1 answer, skipping interim (1xx) answers, from bytes fed in any pieces.

    `feed` returns True once the answer is complete, or once `limit` bytes of its body are held (the
    rest is not waited for; the connection then cannot be reused). `reusable` says whether the
    connection can carry another request afterwards."""

    def __init__(self, limit: int):
        self.limit = limit
        self.buffer = bytearray()
        self.state = HEAD
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.remaining = 0
        self.keep_alive = False
        self.truncated = False
        self.trailer_bytes = 0
        self.started = False  # any byte of an answer arrived

    @property
    def reusable(self) -> bool:
        return self.state == DONE and self.keep_alive and not self.buffer

    def response(self) -> Response:
        return Response(self.status, self.headers, bytes(self.body[:self.limit]))

    def feed(self, data: bytes) -> bool:
        if data:
            self.started = True
            self.buffer += data
        buffer = self.buffer
        while True:
            state = self.state
            if state == HEAD:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD_BYTES:
                        raise RemoteProtocolError("the answer's head is too large")
                    return False
                head = bytes(buffer[:end])
                del buffer[:end + 4]
                self._head(head)
            elif state == LENGTH or state == CHUNK_DATA:
                take = min(self.remaining, len(buffer))
                self._keep(buffer, take)
                self.remaining -= take
                if self.remaining:
                    return self._enough()
                self.state = DONE if state == LENGTH else CHUNK_END
            elif state == CHUNK_SIZE:
                line = self._line(buffer)
                if line is None:
                    return self._enough()
                size = line.split(b";", 1)[0].strip(b" \t")
                if not size or size.strip(HEX_DIGITS) or len(size) > 16:
                    raise RemoteProtocolError(f"bad chunk size {size[:20]!r}")
                self.remaining = int(size, 16)
                self.state = CHUNK_DATA if self.remaining else TRAILERS
            elif state == CHUNK_END:
                if len(buffer) < 2:
                    return self._enough()
                if buffer[:2] != b"\r\n":
                    raise RemoteProtocolError("a chunk does not end with CRLF")
                del buffer[:2]
                self.state = CHUNK_SIZE
            elif state == TRAILERS:
                line = self._line(buffer)
                if line is None:
                    return self._enough()
                self.trailer_bytes += len(line)
                if self.trailer_bytes > MAX_HEAD_BYTES:
                    raise RemoteProtocolError("the answer's trailers are too large")
                if not line:
                    self.state = DONE
            elif state == UNTIL_CLOSE:
                self._keep(buffer, len(buffer))
                return self._enough()
            else:  # DONE: anything after the answer was not asked for, so the connection is not reused
                return True

    def feed_eof(self) -> bool:
        """The peer closed: True when that completes the answer (a body delimited by the close)."""
        if self.state == UNTIL_CLOSE:
            self.state = DONE
            self.keep_alive = False
            return True
        if self.state == DONE:
            return True
        if not self.started:
            raise RemoteProtocolError("the server disconnected without sending an answer")
        raise RemoteProtocolError("the server disconnected before the end of its answer")

    def _enough(self) -> bool:
        if len(self.body) >= self.limit:
            self.truncated = True
            return True
        return False

    def _keep(self, buffer: bytearray, n: int) -> None:
        room = self.limit - len(self.body)
        if room > 0:
            self.body += buffer[:min(n, room)]
        del buffer[:n]

    @staticmethod
    def _line(buffer: bytearray) -> bytes | None:
        end = buffer.find(b"\r\n")
        if end < 0:
            if len(buffer) > MAX_LINE_BYTES:
                raise RemoteProtocolError("a line of the answer is too long")
            return None
        line = bytes(buffer[:end])
        del buffer[:end + 2]
        return line

    def _head(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        status = rest[:3]
        if version not in ("HTTP/1.1", "HTTP/1.0") or len(status) != 3 or not status.isdigit() \
                or rest[3:4] not in ("", " "):
            raise RemoteProtocolError(f"bad status line {lines[0][:60]!r}")
        headers: dict[str, str] = {}
        lengths: set[str] = set()
        codings: list[str] = []
        connection: list[str] = []
        last = ""
        for line in lines[1:]:
            if line[:1] in (" ", "\t"):  # obsolete line folding: part of the previous value
                if not last:
                    raise RemoteProtocolError("the answer's head starts with a folded line")
                headers[last] = f"{headers[last]} {line.strip()}"
                continue
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip() or " " in name or "\t" in name:
                raise RemoteProtocolError(f"bad header line {line[:60]!r}")
            last = name.lower()
            value = value.strip(" \t")
            headers[last] = value
            if last == "content-length":
                lengths.update(v.strip() for v in value.split(","))
            elif last == "transfer-encoding":
                codings += [c.strip().lower() for c in value.split(",") if c.strip()]
            elif last == "connection":
                connection += [c.strip().lower() for c in value.split(",")]
        code = int(status)
        if 100 <= code < 200:
            if code == 101:
                raise RemoteProtocolError("the server switched protocols")
            return  # an interim answer: the real one follows
        self.status, self.headers = code, headers
        self.keep_alive = version == "HTTP/1.1" and "close" not in connection
        if code in (204, 304):
            self.state = DONE
        elif codings:
            if lengths:  # both framings: RFC 9112 says use the coding, then close
                self.keep_alive = False
            self.state = CHUNK_SIZE if codings[-1] == "chunked" else UNTIL_CLOSE
        elif lengths:
            if len(lengths) != 1 or not (length := lengths.pop()).isdigit():
                raise RemoteProtocolError("bad Content-Length")
            self.remaining = int(length)
            self.state = LENGTH if self.remaining else DONE
        else:
            self.state = UNTIL_CLOSE


class Connection(asyncio.Protocol):
    """One keep-alive connection; it carries one exchange at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        parser, waiter = self.parser, self.waiter
        if parser is None or waiter is None or waiter.done():
            self.close()  # bytes nobody asked for
            return
        try:
            complete = parser.feed(data)
        except HTTPError as exc:
            self.close()
            waiter.set_exception(exc)
            return
        if complete:
            waiter.set_result(parser.response())

    def eof_received(self) -> bool:
        parser, waiter = self.parser, self.waiter
        self.closed = True
        if parser is not None and waiter is not None and not waiter.done():
            try:
                if parser.feed_eof():
                    waiter.set_result(parser.response())
            except HTTPError as exc:
                waiter.set_exception(exc)
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if self.parser is not None and not self.parser.started:
                waiter.set_exception(RemoteProtocolError("the server disconnected without sending an answer"))
            else:
                waiter.set_exception(ReadError(f"the connection was lost: {exc or 'closed by the server'}"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    async def exchange(self, request: bytes, limit: int) -> Response:
        self.parser = parser = ResponseParser(limit)
        self.waiter = waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        try:
            return await waiter
        finally:
            self.waiter = None
            if not parser.reusable:
                self.close()


class Client:
    """Keep-alive connections per origin. Idle ones are kept `keepalive` seconds (and dropped as soon as
    the server closes them); a busy connection is never shared."""

    def __init__(self, tls: ssl.SSLContext, *, keepalive: float):
        self.tls = tls
        self.keepalive = keepalive
        self.idle: dict[Origin, list[Connection]] = {}

    async def post(self, origin: Origin, request: bytes, *, limit: int) -> Response:
        """Sends `request` (a complete HTTP/1.1 request) and returns the answer with at most `limit`
        bytes of its body. A kept connection that fails before any byte of an answer is, almost always,
        one the server closed while it was idle: the request goes out once more on a new connection. (A
        receiver that did read it and then closed without answering gets it twice, with the same
        X-Service-Delivery, as after any retry.)"""
        connection = self._idle_connection(origin)
        if connection is not None:
            try:
                response = await connection.exchange(request, limit)
            except RemoteProtocolError:
                if connection.parser is None or connection.parser.started:
                    raise
            else:
                self._release(origin, connection)
                return response
        connection = await self._connect(origin)
        try:
            response = await connection.exchange(request, limit)
        except BaseException:
            connection.close()
            raise
        self._release(origin, connection)
        return response

    def _idle_connection(self, origin: Origin) -> Connection | None:
        idle = self.idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self.keepalive:
                return connection
            connection.close()
        return None

    def _release(self, origin: Origin, connection: Connection) -> None:
        if connection.closed:
            return
        connection.parser = None
        connection.idle_since = time.monotonic()
        self.idle.setdefault(origin, []).append(connection)

    async def _connect(self, origin: Origin) -> Connection:
        loop = asyncio.get_running_loop()
        https = origin.scheme == "https"
        try:
            _, connection = await loop.create_connection(
                Connection, host=origin.address, port=origin.port, ssl=self.tls if https else None,
                server_hostname=origin.host if https else None)
        except OSError as exc:  # refused, unreachable, TLS handshake or certificate failures
            raise ConnectError(str(exc) or type(exc).__name__) from None
        return connection

    def close_idle(self) -> None:
        """Closes the connections idle longer than the keep-alive time."""
        now = time.monotonic()
        for origin, connections in list(self.idle.items()):
            kept = []
            for connection in connections:
                if not connection.closed and now - connection.idle_since < self.keepalive:
                    kept.append(connection)
                else:
                    connection.close()
            if kept:
                self.idle[origin] = kept
            else:
                del self.idle[origin]

    def close_all(self) -> None:
        for connections in self.idle.values():
            for connection in connections:
                connection.close()
        self.idle.clear()
