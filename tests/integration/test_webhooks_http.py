"""The webhook HTTP client: the answer parser fed in every split, and the client against real servers on
loopback (keep-alive reuse, servers that close, answers too large to keep, TLS name checks)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from commands.addresses import RefusedTarget, parse_target
from delivery.http import Client, ConnectError, Origin, RemoteProtocolError, ResponseParser
from delivery.webhooks import request_head

CERTS = Path(__file__).resolve().parents[1] / "support" / "certs"


def parse(raw: bytes, limit: int = 1024, step: int | None = None, eof: bool = False) -> ResponseParser:
    """Feeds `raw` whole, or `step` bytes at a time; with `eof`, then the close of the connection."""
    parser = ResponseParser(limit)
    pieces = [raw] if step is None else [raw[i:i + step] for i in range(0, len(raw), step)]
    complete = False
    for piece in pieces:
        assert not complete, "bytes after the answer was complete"
        complete = parser.feed(piece)
    if eof and not complete:
        complete = parser.feed_eof()
    assert complete
    return parser


ANSWERS = [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", True),
    (b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nRetry-After: 3\r\n\r\nboom", 500, b"boom", True),
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, b"", True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\n\r\n",
     200, b"hello!", True),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
     b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nyes", 201, b"yes", True),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", False),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Folded: a\r\n  b\r\n\r\nok", 200, b"ok", True),
    (b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/\r\nContent-Length: 0\r\n\r\n", 302, b"", True),
]


@pytest.mark.parametrize("raw, status, body, reusable", ANSWERS)
@pytest.mark.parametrize("step", [None, 1, 7])
def test_answers_parse_the_same_in_any_pieces(raw, status, body, reusable, step):
    parser = parse(raw, step=step)
    response = parser.response()
    assert (response.status, response.body, parser.reusable) == (status, body, reusable)
    if status == 500:
        assert response.headers["retry-after"] == "3"


@pytest.mark.parametrize("step", [None, 1, 5])
def test_a_body_delimited_by_the_close_ends_with_it(step):
    parser = parse(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", step=step, eof=True)
    assert parser.response().body == b"until the end" and not parser.reusable


@pytest.mark.parametrize("framing", [b"Content-Length: 5000\r\n\r\n", b"Transfer-Encoding: chunked\r\n\r\n1388\r\n",
                                     b"\r\n"])
def test_only_the_start_of_a_large_answer_is_kept_and_the_connection_is_dropped(framing):
    parser = ResponseParser(1024)
    assert parser.feed(b"HTTP/1.1 200 OK\r\n" + framing)  is False
    complete = False
    sent = 0
    while not complete:  # the answer is complete for us once 1 KiB is held, long before its end
        complete = parser.feed(b"x" * 100)
        sent += 100
    assert sent < 5000
    assert parser.response().body == b"x" * 1024 and not parser.reusable


def test_bytes_after_the_answer_make_the_connection_unusable():
    parser = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n")
    assert parser.response().body == b"ok" and not parser.reusable


def test_both_framings_use_the_chunks_and_drop_the_connection():
    parser = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
    assert parser.response().body == b"ok" and not parser.reusable


@pytest.mark.parametrize("raw", [
    b"HTTP/2 200 OK\r\n\r\n", b"ICY 200 OK\r\n\r\n", b"HTTP/1.1 2000 OK\r\n\r\n", b"HTTP/1.1 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok", b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n" + b"X-Long: " + b"a" * 70_000,
])
def test_malformed_answers_are_protocol_errors(raw):
    with pytest.raises(RemoteProtocolError):
        ResponseParser(1024).feed(raw)


def test_a_close_before_the_end_of_the_answer_is_an_error():
    parser = ResponseParser(1024)
    with pytest.raises(RemoteProtocolError, match="without sending"):
        parser.feed_eof()
    parser = ResponseParser(1024)
    parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok")
    with pytest.raises(RemoteProtocolError, match="before the end"):
        parser.feed_eof()


def test_the_request_target_and_host_cannot_break_the_request():
    head = request_head(parse_target("http://127.0.0.1:8080/a b/\u00e9?q=1&r=%20#", allow_private=True)).decode()
    assert head.startswith("POST /a%20b/%C3%A9?q=1&r=%20 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n")
    assert request_head(parse_target("https://[::1]/x", allow_private=True)).decode().split("\r\n")[1] == "Host: [::1]"
    assert request_head(parse_target("https://b\u00fccher.example/x", allow_private=False)).decode().split("\r\n")[1] \
        == "Host: xn--bcher-kva.example"
    with pytest.raises(RefusedTarget):
        request_head(parse_target("https://a..b/x", allow_private=False))


# --- the client against real servers ---------------------------------------------------------------------


class Server:
    """An HTTP/1.1 server on loopback that answers each request with `answer` and counts connections;
    `close_after` closes a connection after that many answers, `drop_request` closes it unanswered on
    receiving its request of that number."""

    def __init__(self, answer: bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", close_after: int = 0,
                 drop_request: int = 0, tls: ssl.SSLContext | None = None):
        self.answer, self.close_after, self.drop_request, self.tls = answer, close_after, drop_request, tls
        self.connections = 0
        self.requests: list[bytes] = []

    async def __aenter__(self) -> "Server":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                self.requests.append(head + await reader.readexactly(length))
                if answered + 1 == self.drop_request:
                    break
                writer.write(self.answer)
                await writer.drain()
                answered += 1
                if answered == self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def request(path: str = "/hook", body: bytes = b"{}") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: hooks.test\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def test_keep_alive_connections_are_reused_per_origin():
    async def run():
        client = Client(ssl.create_default_context(), keepalive=30)
        async with Server() as server:
            origin = Origin("http", "127.0.0.1", server.port, "127.0.0.1")
            for n in range(3):
                response = await client.post(origin, request(body=b'{"n": %d}' % n), limit=1024)
                assert (response.status, response.body) == (200, b"ok")
            answers = await asyncio.gather(*(client.post(origin, request(), limit=1024) for _ in range(5)))
            assert [a.status for a in answers] == [200] * 5
            assert server.connections == 5  # one for the three in a row, four more for the five at once
            assert server.requests[1].endswith(b'{"n": 1}')
            client.close_all()

    asyncio.run(run())


def test_a_connection_the_server_closed_while_idle_is_replaced():
    async def run():
        client = Client(ssl.create_default_context(), keepalive=30)
        async with Server(close_after=1) as server:
            origin = Origin("http", "127.0.0.1", server.port, "127.0.0.1")
            for _ in range(3):
                assert (await client.post(origin, request(), limit=1024)).status == 200
                await asyncio.sleep(0.05)  # the close reaches us while the connection is idle
            assert server.connections == 3 and len(server.requests) == 3
            client.close_all()

    asyncio.run(run())


def test_a_kept_connection_closed_without_an_answer_is_replaced_once():
    """A kept connection can be closed by the server just as it is reused: the request then goes out on a
    new connection. A new connection closed without an answer is not tried again."""
    async def run():
        client = Client(ssl.create_default_context(), keepalive=30)
        async with Server(drop_request=2) as server:  # each connection's second request: closed, no answer
            origin = Origin("http", "127.0.0.1", server.port, "127.0.0.1")
            assert (await client.post(origin, request(), limit=1024)).status == 200
            assert (await client.post(origin, request(body=b'{"n": 2}'), limit=1024)).status == 200
            assert server.connections == 2 and [r[-8:] for r in server.requests[1:]] == [b'{"n": 2}'] * 2
        async with Server(drop_request=1) as server:
            origin = Origin("http", "127.0.0.1", server.port, "127.0.0.1")
            with pytest.raises(RemoteProtocolError, match="without sending"):
                await client.post(origin, request(), limit=1024)
            assert server.connections == 1
        client.close_all()

    asyncio.run(run())


def test_a_large_answer_is_cut_at_the_limit_and_its_connection_not_reused():
    async def run():
        client = Client(ssl.create_default_context(), keepalive=30)
        large = b"HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n" + b"x" * 200_000
        async with Server(answer=large) as server:
            origin = Origin("http", "127.0.0.1", server.port, "127.0.0.1")
            first = await client.post(origin, request(), limit=1024)
            second = await client.post(origin, request(), limit=1024)
            assert first.body == second.body == b"x" * 1024
            assert server.connections == 2
            client.close_all()

    asyncio.run(run())


def test_a_refused_connection_is_a_connect_error():
    async def run():
        async with Server() as server:
            port = server.port
        client = Client(ssl.create_default_context(), keepalive=30)
        with pytest.raises(ConnectError):
            await client.post(Origin("http", "127.0.0.1", port, "127.0.0.1"), request(), limit=1024)

    asyncio.run(run())


def test_tls_goes_to_the_given_address_and_verifies_the_urls_host_name():
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(CERTS / "hooks-test.pem")
    trusting = ssl.create_default_context(cafile=str(CERTS / "hooks-test-ca.pem"))

    async def run():
        async with Server(tls=served) as server:
            client = Client(trusting, keepalive=30)
            response = await client.post(Origin("https", "127.0.0.1", server.port, "hooks.test"), request(), limit=1024)
            assert response.status == 200
            with pytest.raises(ConnectError, match="certificate"):  # the certificate is not for this name
                await client.post(Origin("https", "127.0.0.1", server.port, "other.test"), request(), limit=1024)
            with pytest.raises(ConnectError, match="certificate"):  # nor trusted by the system's authorities
                await Client(ssl.create_default_context(), keepalive=30).post(
                    Origin("https", "127.0.0.1", server.port, "hooks.test"), request(), limit=1024)
            client.close_all()

    asyncio.run(run())
