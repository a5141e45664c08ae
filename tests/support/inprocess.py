"""The API in the test process (real PostgreSQL, real NATS, real workers), for tests that substitute a
part a subprocess cannot take from outside: the clock, or routes of their own."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any, Coroutine, Sequence, TypeVar

import httpx

from parley.runtime import Runtime
from parley.settings import Settings
from mcp_server.service import McpService
from readapi.app import create_app
from readapi.services import Services

T = TypeVar("T")


class InProcessApi:
    def __init__(self, database_url: str, nats_url: str, **settings: Any):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runtime = Runtime(Settings(nats_stream=f"T{uuid.uuid4().hex[:10].upper()}", **settings),
                               database_url, nats_url)
        self.run(self.runtime.start_workers())
        self.app = self.run(self.runtime.create_app())

    @property
    def services(self) -> Services:
        return self.runtime.services

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    def app_with(self, extra_routes: Sequence) -> Any:
        return create_app(self.runtime.services, McpService(self.runtime.services), extra_routes)

    def request(self, method: str, path: str, app: Any = None, **kwargs: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=app or self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://parley.test") as client:
                return await client.request(method, path, **kwargs)
        return self.run(send())

    def close(self) -> None:
        self.run(self.runtime.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
