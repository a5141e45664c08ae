"""A lean HTTP/1.1 load client for the benchmarks: keep-alive connections, one request at a time on
each, answers with a Content-Length (as the API's JSON answers have).

It shares the machine with the server it measures, so its own CPU matters: httpx spent about a
millisecond per request, a fair share of a core at the rates the benchmarks run."""

from __future__ import annotations

import asyncio
import time

import msgspec

IDLE_SECONDS = 2.0  # a connection idle longer is not reused: the server closes idle ones (uvicorn: 5 s)


class RawClient:
    def __init__(self, base_url: str, headers: dict[str, str] | None = None):
        host, port = base_url.removeprefix("http://").rstrip("/").split(":")
        self.host, self.port = host, int(port)
        self.headers = headers or {}
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def request(self, method: str, path: str, body: object = None,
                      headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        payload = b"" if body is None else msgspec.json.encode(body)
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}", f"Content-Length: {len(payload)}"]
        if body is not None:
            head.append("Content-Type: application/json")
        head += [f"{name}: {value}" for name, value in {**self.headers, **(headers or {})}.items()]
        reader, writer = await self._connection()
        try:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
            status_and_headers = await reader.readuntil(b"\r\n\r\n")
            status = int(status_and_headers[9:12])
            length = 0
            for line in status_and_headers.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            answer = await reader.readexactly(length)
        except BaseException:
            writer.close()
            raise
        self.idle.append((reader, writer, time.monotonic()))
        return status, answer

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self.idle:
            reader, writer, since = self.idle.pop()
            if time.monotonic() - since < IDLE_SECONDS:
                return reader, writer
            writer.close()
        return await asyncio.open_connection(self.host, self.port)

    async def post(self, path: str, body: object, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        return await self.request("POST", path, body, headers)

    async def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        return await self.request("GET", path, None, headers)

    def close(self) -> None:
        for _, writer, _ in self.idle:
            writer.close()
        self.idle.clear()
