"""An open stream's channel holds no queue or task: what is put waits in a list until the stream takes it
all at once; a reader `CHANNEL_BACKLOG` frames behind is refused more; the end comes after what was put.
The SSE response ends its body when the client disconnects, from one plain task rather than a task group."""

from __future__ import annotations

import asyncio
import uuid

from events.live import CHANNEL_BACKLOG, Channel
from readapi.routes.realtime import EventStream


def channel() -> Channel:
    return Channel("visitor", uuid.uuid4(), uuid.uuid4())


def test_a_waiting_stream_is_woken_by_a_put_and_takes_everything_put_since():
    async def run() -> list:
        c = channel()
        taking = asyncio.ensure_future(c.taken())
        await asyncio.sleep(0)
        assert not taking.done()
        c.put(7, b"a")
        c.put(0, b"b")
        first = await taking
        c.end()
        return [first, await c.taken()]

    assert asyncio.run(run()) == [[(7, b"a"), (0, b"b")], [None]]


def test_a_channel_refuses_frames_past_its_backlog_and_ends_after_what_it_holds():
    async def run() -> None:
        c = channel()
        assert all(c.put(i + 1, b"x") for i in range(CHANNEL_BACKLOG))
        assert not c.put(CHANNEL_BACKLOG + 1, b"x")
        assert not c.ended
        c.end()
        assert c.ended
        assert len(await c.taken()) == CHANNEL_BACKLOG + 1

    asyncio.run(run())


def test_the_event_stream_ends_its_body_when_the_client_disconnects():
    sent: list[dict] = []

    async def run() -> None:
        c = channel()
        disconnect = asyncio.Event()

        async def body():
            yield b"retry: 1000\n\n"
            for item in await c.taken():
                if item is None:
                    return
                yield item[1]

        async def receive() -> dict:
            await disconnect.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        response = EventStream(body(), gone=c.end).to_asgi_response(None, None)  # type: ignore[arg-type]
        serving = asyncio.ensure_future(response({"type": "http"}, receive, send))
        await asyncio.sleep(0.01)
        assert not serving.done()
        disconnect.set()
        await asyncio.wait_for(serving, 1)

    asyncio.run(run())
    assert [m.get("body") for m in sent[1:]] == [b"retry: 1000\n\n", b""]
    assert sent[0]["type"] == "http.response.start"
