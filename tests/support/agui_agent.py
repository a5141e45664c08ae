"""A real AG-UI agent for the tests: pydantic-ai's `AGUIAdapter` on a `FunctionModel`, so its answers are
scripted without a language model, served by uvicorn on loopback in a thread of the test process.

`answer` is the model: an async generator of text deltas (str) or tool calls (`DeltaToolCalls`), given
pydantic-ai's messages and the run's `AgentInfo`. `bearer` is the secret the agent accepts (401 for
anything else). `override`, when set, answers a request instead of the agent (a raw HTTP answer: a
status, a garbage stream). Every request body and Authorization header is kept in `requests`."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import uvicorn
from ag_ui.core import CustomEvent
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

Answer = Callable[[list, AgentInfo], AsyncIterator[Any]]


async def words(*parts: str, pause: float = 0.0) -> AsyncIterator[str]:
    for part in parts:
        if pause:
            await asyncio.sleep(pause)
        yield part


def say(*parts: str, pause: float = 0.0) -> Answer:
    return lambda messages, info: words(*parts, pause=pause)


def call_tool(name: str, arguments: str, tool_call_id: str) -> dict[int, DeltaToolCall]:
    return {0: DeltaToolCall(name=name, json_args=arguments, tool_call_id=tool_call_id)}


def last_tool_return(messages: list) -> Any:
    """The content of the tool result that the latest request carries, or None."""
    for part in messages[-1].parts:
        if getattr(part, "part_kind", None) == "tool-return":
            return part.content
    return None


async def open_cart_then_report(messages: list, info: Any) -> AsyncIterator:
    """Offers the page's `openCart` action; once its result comes back, says it."""
    result = last_tool_return(messages)
    if result is not None:
        yield f"Done: {result}"
    else:
        yield call_tool("openCart", '{"highlight": "shoes"}', "call-1")


@dataclass
class Received:
    body: dict
    authorization: str | None


@dataclass
class AGUIAgent:
    bearer: str | None = None
    answer: Answer = field(default_factory=lambda: say("Hello!"))
    override: Callable[[Request], Any] | None = None
    requests: list[Received] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        async def stream(messages, info: AgentInfo):
            async for item in self.answer(messages, info):
                yield item

        self.agent = Agent(FunctionModel(stream_function=stream))

        @self.agent.tool_plain
        def hand_off() -> ToolReturn:
            """A tool of the agent's own: hands the conversation to the team with AG-UI's CUSTOM event."""
            return ToolReturn(return_value="handed off",
                              metadata=[CustomEvent(name="handoff", value={"reason": "the visitor asked for a person"})])
        self.app = Starlette(routes=[Route("/agent", self._handle, methods=["POST"])])
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    async def _handle(self, request: Request):
        self.requests.append(Received(json.loads(await request.body()), request.headers.get("authorization")))
        if self.override is not None and (answer := await self.override(request)) is not None:
            return answer
        if request.headers.get("authorization") != f"Bearer {self.bearer}":
            return Response("who are you?", status_code=401)
        return await AGUIAdapter.dispatch_request(request, agent=self.agent)

    def start(self) -> "AGUIAgent":
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        for _ in range(1000):
            if self._server.started:
                break
            threading.Event().wait(0.01)
        else:
            raise RuntimeError("the AG-UI agent did not start")
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/agent"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(10)


def answering(status: int, headers: dict[str, str] | None = None):
    """An override: a plain HTTP answer instead of the agent's."""
    async def handle(request: Request) -> Response:
        return Response("not now", status_code=status, headers=headers)
    return handle


def raw_stream(*frames: str | dict, pause: float = 0.0):
    """An override: a text/event-stream of the given frames (a dict is sent as one event's JSON data,
    a string as it is), whatever the protocol says of them."""
    async def body():
        for frame in frames:
            if pause:
                await asyncio.sleep(pause)
            yield f"data: {json.dumps(frame)}\n\n" if isinstance(frame, dict) else frame

    async def handle(request: Request) -> StreamingResponse:
        return StreamingResponse(body(), media_type="text/event-stream")
    return handle


def later(after: int, override):
    """An override for the first `after` requests, then the agent itself."""
    seen = []

    async def handle(request: Request):
        seen.append(1)
        return await override(request) if len(seen) <= after else None
    return handle
