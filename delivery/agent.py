"""The AI agent worker: works the run queue that the `agent` projection fills, calling each website's
agent over AG-UI and streaming its answer into the conversation.

Runs are claimed like webhook deliveries: `FOR UPDATE SKIP LOCKED`, and a claim is a lease longer than a
run may last, so a run whose worker died becomes due again. Only the oldest open run of a conversation
can be claimed, so a conversation has one run at a time; what its visitor writes meanwhile waits in the
next run, together. A run that already put a message or an action in the store is never run again
(`acted`): a run answers its messages at most once, and a run that did not get that far is not lost.

One run: the request is the protocol's own `RunAgentInput` (the visitor-visible transcript, the
visitor's readables as context and actions as tools); the answer is an SSE stream of the protocol's
events, each validated with the package's models. Text deltas go to the visitor's and the operators'
open channels as live frames (`delivery.realtime`), each finished text message is appended as the
agent's `message.created`, a call of one of the visitor's actions is offered to the visitor. Calls are
retried (new run id) only before the agent answered: connection failures, 5xx, 429. Any other failure
keeps what was streamed (marked incomplete), posts the website's fallback message and hands the
conversation to the team."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator

import httpx
import msgspec
import psycopg
from ag_ui.core import (AssistantMessage, Context, EventType, FunctionCall, RunAgentInput, Tool, ToolCall,
                        ToolMessage, UserMessage)
from ag_ui.core import Event as AGUIEvent
from psycopg_pool import AsyncConnectionPool
from pydantic import TypeAdapter, ValidationError

from commands.agent import DEFAULT_FALLBACK, action_stream
from commands.messages import MAX_CONTENT
from commands.streams import now
from commands.addresses import RefusedTarget, parse_target, resolve
from events.live import LiveConnection, LiveFrame, live_subject
from delivery.webhooks import parse_retry_after
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending, StreamConflict
from events.ids import new_id
from events.supervision import keep_running, work_when_woken
from projections.agent import WAKE_CHANNEL, AgentProjection
from projections.views.agent_runs import ANSWERED_ACTIONS, CLAIM, NEXT_DUE, TRANSCRIPT
from projections.chat import VisitorContext, visitor_context
from projections.runner import ensure_tables

log = logging.getLogger("parley.agent")

LEASE_MARGIN_SECONDS = 5.0
MAX_WAIT_SECONDS = 1.0  # a poll now and then finds the leases of a dead worker
RETRY_CAP_SECONDS = 30.0
TRANSCRIPT_LIMIT = 500  # the most recent messages a run sends
ERROR_TEXT_LIMIT = 500
USER_AGENT = "Parley-Agent/1"
HANDOFF = "handoff"  # the CUSTOM event by which an agent hands the conversation to the team
EVENTS = TypeAdapter(AGUIEvent)
KNOWN_TYPES = frozenset(t.value for t in EventType)
EMPTY_SCHEMA = {"type": "object", "properties": {}}

# What a failed run is, for the operators' status.
UNREACHABLE, REFUSED, TIMED_OUT, PROTOCOL_ERROR, RUN_ERROR = (
    "unreachable", "refused", "timed_out", "protocol_error", "run_error")
INTERRUPTED = "interrupted"


class RunFailed(Exception):
    def __init__(self, error_class: str, error: str, *, retryable: bool = False, retry_after: float | None = None):
        super().__init__(error)
        self.error_class, self.error = error_class, error[:ERROR_TEXT_LIMIT]
        self.retryable, self.retry_after = retryable, retry_after


@dataclass(frozen=True)
class Claimed:
    run_id: uuid.UUID
    org_id: uuid.UUID
    website_id: uuid.UUID
    conversation_id: uuid.UUID
    customer_id: uuid.UUID
    kind: str  # answer, or greeting
    reply_to: uuid.UUID | None
    acted: bool
    attempts: int
    url: str
    secret: str  # in the clear: opened when claimed
    fallback_message: str | None
    greeting: str | None


async def run_input(conn: psycopg.AsyncConnection, run: Claimed, run_id: str,
                    context: VisitorContext | None) -> tuple[RunAgentInput, uuid.UUID | None]:
    """The request, and the visitor message the run answers (the latest one, when the run was asked for
    by an action's result)."""
    rows = await (await conn.execute(TRANSCRIPT, {"org": run.org_id, "conversation": run.conversation_id,
                                                  "limit": TRANSCRIPT_LIMIT})).fetchall()
    actions = await (await conn.execute(ANSWERED_ACTIONS, (run.conversation_id,))).fetchall()
    timeline: list[tuple[tuple, Any]] = []
    latest_visitor, latest_at = None, None
    for message_id, sender, content, sort_at, answer, at in rows:
        if sender == "customer":
            if latest_at is None or at > latest_at:
                latest_visitor, latest_at = message_id, at
            timeline.append(((sort_at, answer, at, 0), UserMessage(id=str(message_id), content=content)))
        else:
            timeline.append(((sort_at, answer, at, 0), AssistantMessage(id=str(message_id), content=content)))
    for tool_call_id, name, arguments, result, sort_at, at in actions:
        call = ToolCall(id=tool_call_id, function=FunctionCall(name=name, arguments=arguments))
        timeline.append(((sort_at, True, at, 1), AssistantMessage(id=f"{tool_call_id}:call", tool_calls=[call])))
        timeline.append(((sort_at, True, at, 2), ToolMessage(id=f"{tool_call_id}:result", tool_call_id=tool_call_id,
                                                             content=result)))
    timeline.sort(key=lambda item: item[0])
    return RunAgentInput(
        thread_id=str(run.conversation_id), run_id=run_id, state={},
        messages=[message for _, message in timeline],
        context=[Context(description=r.description, value=msgspec.json.encode(r.value).decode())
                 for r in (context.readables if context else [])],
        tools=[Tool(name=a.name, description=a.description, parameters=EMPTY_SCHEMA)
               for a in (context.actions if context else [])],
        forwarded_props={"websiteId": str(run.website_id), "conversationId": str(run.conversation_id),
                         "customerId": str(run.customer_id)},
    ), run.reply_to or latest_visitor


async def sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event (its lines joined), as the SSE rules frame them."""
    lines: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if lines:
                yield "\n".join(lines)
                lines = []
        elif line.startswith("data:"):
            lines.append(line[6:] if line.startswith("data: ") else line[5:])
    if lines:
        yield "\n".join(lines)


@dataclass
class Text:
    message_id: uuid.UUID  # the id the stored message gets
    parts: list[str] = field(default_factory=list)


@dataclass
class Call:
    name: str
    parts: list[str] = field(default_factory=list)


class Answer:
    """Follows one run's events, in the order the protocol allows; what to do with each is the
    worker's (`Worker.on_*`)."""

    def __init__(self, worker: "Worker", run: Claimed, reply_to: uuid.UUID | None, actions: set[str]):
        self.worker, self.run, self.reply_to, self.actions = worker, run, reply_to, actions
        self.started = self.ended = False
        self.texts: dict[str, Text] = {}
        self.chunked: str | None = None  # the text message that TEXT_MESSAGE_CHUNKs are filling
        self.calls: dict[str, Call] = {}
        self.chunked_call: str | None = None
        self.handoff = False
        self.error: str | None = None  # RUN_ERROR's message

    async def feed(self, data: str) -> None:
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError):
            raise RunFailed(PROTOCOL_ERROR, "an event is not JSON") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            raise RunFailed(PROTOCOL_ERROR, "an event has no type")
        if raw["type"] not in KNOWN_TYPES:
            log.debug("skipped an AG-UI event of unknown type %r", raw["type"][:60])
            return
        try:
            event = EVENTS.validate_python(raw)
        except ValidationError as exc:
            raise RunFailed(PROTOCOL_ERROR, f"an invalid {raw['type']} event: {exc.errors()[0]['msg']}") from None
        if self.ended:
            raise RunFailed(PROTOCOL_ERROR, f"{event.type.value} after the run ended")
        if not self.started:
            if event.type != EventType.RUN_STARTED:
                raise RunFailed(PROTOCOL_ERROR, f"the first event is {event.type.value}, not RUN_STARTED")
            self.started = True
            await self.worker.typing(self.run, True)
            return
        if self.chunked is not None and event.type != EventType.TEXT_MESSAGE_CHUNK:
            await self._end_text(self.chunked)  # chunks end with the first event that is not one
        if self.chunked_call is not None and event.type != EventType.TOOL_CALL_CHUNK:
            await self._end_call(self.chunked_call)
        await self._handle(event)

    async def _handle(self, event) -> None:
        kind = event.type
        if kind == EventType.RUN_STARTED:
            raise RunFailed(PROTOCOL_ERROR, "RUN_STARTED inside a run")
        if kind == EventType.TEXT_MESSAGE_START:
            self._start_text(event.message_id)
        elif kind == EventType.TEXT_MESSAGE_CONTENT:
            await self._content(event.message_id, event.delta)
        elif kind == EventType.TEXT_MESSAGE_END:
            await self._end_text(event.message_id)
        elif kind == EventType.TEXT_MESSAGE_CHUNK:
            if event.message_id is not None and event.message_id != self.chunked:
                if self.chunked is not None:
                    await self._end_text(self.chunked)
                self._start_text(event.message_id)
                self.chunked = event.message_id
            if self.chunked is None:
                raise RunFailed(PROTOCOL_ERROR, "the first TEXT_MESSAGE_CHUNK has no messageId")
            if event.delta:
                await self._content(self.chunked, event.delta)
        elif kind == EventType.TOOL_CALL_START:
            self._start_call(event.tool_call_id, event.tool_call_name)
        elif kind == EventType.TOOL_CALL_ARGS:
            self._call(event.tool_call_id).parts.append(event.delta)
        elif kind == EventType.TOOL_CALL_END:
            await self._end_call(event.tool_call_id)
        elif kind == EventType.TOOL_CALL_CHUNK:
            if event.tool_call_id is not None and event.tool_call_id != self.chunked_call:
                if self.chunked_call is not None:
                    await self._end_call(self.chunked_call)
                if not event.tool_call_name:
                    raise RunFailed(PROTOCOL_ERROR, "the first TOOL_CALL_CHUNK of a call has no toolCallName")
                self._start_call(event.tool_call_id, event.tool_call_name)
                self.chunked_call = event.tool_call_id
            if self.chunked_call is None:
                raise RunFailed(PROTOCOL_ERROR, "the first TOOL_CALL_CHUNK has no toolCallId")
            if event.delta:
                self.calls[self.chunked_call].parts.append(event.delta)
        elif kind == EventType.CUSTOM and event.name == HANDOFF:
            self.handoff = True
        elif kind == EventType.RUN_FINISHED:
            if self.texts or self.calls:
                raise RunFailed(PROTOCOL_ERROR, "RUN_FINISHED while a text message or a tool call is open")
            self.ended = True
        elif kind == EventType.RUN_ERROR:
            self.ended = True
            self.error = event.message

    def _start_text(self, message_id: str) -> None:
        if message_id in self.texts:
            raise RunFailed(PROTOCOL_ERROR, f"text message {message_id[:60]!r} started twice")
        self.texts[message_id] = Text(new_id())

    async def _content(self, message_id: str, delta: str) -> None:
        text = self.texts.get(message_id)
        if text is None:
            raise RunFailed(PROTOCOL_ERROR, f"content for text message {message_id[:60]!r}, which is not open")
        text.parts.append(delta)
        await self.worker.delta(self.run, text.message_id, delta)

    async def _end_text(self, message_id: str) -> None:
        text = self.texts.pop(message_id, None)
        if text is None:
            raise RunFailed(PROTOCOL_ERROR, f"end of text message {message_id[:60]!r}, which is not open")
        if message_id == self.chunked:
            self.chunked = None
        await self.worker.store_text(self.run, self.reply_to, text, incomplete=False)

    def _start_call(self, tool_call_id: str, name: str) -> None:
        if tool_call_id in self.calls:
            raise RunFailed(PROTOCOL_ERROR, f"tool call {tool_call_id[:60]!r} started twice")
        self.calls[tool_call_id] = Call(name)

    def _call(self, tool_call_id: str) -> Call:
        call = self.calls.get(tool_call_id)
        if call is None:
            raise RunFailed(PROTOCOL_ERROR, f"arguments for tool call {tool_call_id[:60]!r}, which is not open")
        return call

    async def _end_call(self, tool_call_id: str) -> None:
        call = self._call(tool_call_id)
        del self.calls[tool_call_id]
        if tool_call_id == self.chunked_call:
            self.chunked_call = None
        if call.name not in self.actions:
            log.warning("agent of website %s called %r, which the visitor did not register; ignored",
                        self.run.website_id, call.name[:60])
            return
        await self.worker.offer(self.run, tool_call_id, call.name, "".join(call.parts))

    def open_texts(self) -> list[Text]:
        return list(self.texts.values())


@dataclass(frozen=True)
class AgentSettings:
    """What the agent worker is told by the composition root (PARLEY_AGENT_*, docs/configuration.md)."""

    nats_stream: str
    webhook_allow_private: bool
    agent_first_event_seconds: float
    agent_idle_seconds: float
    agent_run_seconds: float
    agent_retry_attempts: int
    agent_retry_base_seconds: float
    agent_concurrency: int


class Worker:
    def __init__(self, store: EventStore, database_url: str, nats_url: str, settings: AgentSettings, sealer: Sealer):
        self.settings = settings
        self.sealer = sealer  # opens the agents' bearer secrets, stored sealed
        self.store = store
        self.database_url = database_url
        self.tasks: set[asyncio.Task] = set()
        self.wake = asyncio.Event()
        # the agent's streamed text and typing; the runs go on without it (their messages reach the visitor
        # from the store)
        self.live = LiveConnection(nats_url, live_subject(settings.nats_stream), "agent live frames")
        self.client: httpx.AsyncClient | None = None
        self.pool: AsyncConnectionPool | None = None

    async def run(self) -> None:
        await keep_running("agent worker", self._run_once, log)

    async def _run_once(self) -> None:
        s = self.settings
        async with AsyncConnectionPool(self.database_url, min_size=2, max_size=8, open=False,
                                       kwargs={"autocommit": True}) as pool:
            self.pool = pool
            async with pool.connection() as conn:
                await ensure_tables(conn, AgentProjection())
            self.client = httpx.AsyncClient(follow_redirects=False, timeout=None, trust_env=False,
                                            limits=httpx.Limits(max_connections=s.agent_concurrency),
                                            headers={"User-Agent": USER_AGENT})
            live = asyncio.create_task(self.live.run())
            try:
                await work_when_woken(self.database_url, WAKE_CHANNEL, self.wake, self._start_due)
            finally:
                live.cancel()
                for task in self.tasks:
                    task.cancel()
                await asyncio.gather(live, *self.tasks, return_exceptions=True)
                await self.client.aclose()

    async def _start_due(self) -> float:
        """Starts the runs that are due, as many as it may; the seconds until it should look again."""
        wait = MAX_WAIT_SECONDS
        free = self.settings.agent_concurrency - len(self.tasks)
        if free > 0:
            for row in await self._claim(free):
                self._start(row)
            wait = await self._next_due()
        return max(0.005, min(MAX_WAIT_SECONDS, wait))

    async def _claim(self, limit: int) -> list[Claimed]:
        lease = self.settings.agent_run_seconds + LEASE_MARGIN_SECONDS
        async with self.pool.connection() as conn:
            rows = await (await conn.execute(CLAIM, {"limit": limit, "lease": lease})).fetchall()
        return [self._opened(Claimed(*row)) for row in rows]

    def _opened(self, row: Claimed) -> Claimed:
        return replace(row, secret=self.sealer.open(row.secret))

    async def _next_due(self) -> float:
        async with self.pool.connection() as conn:
            wait = (await (await conn.execute(NEXT_DUE)).fetchone())[0]
        return MAX_WAIT_SECONDS if wait is None else float(wait)

    def _start(self, row: Claimed) -> None:
        task = asyncio.create_task(self._run(row))
        self.tasks.add(task)

        def done(finished: asyncio.Task) -> None:
            self.tasks.discard(finished)
            self.wake.set()  # a slot is free, and the conversation's next run may go

        task.add_done_callback(done)

    # --- one run

    async def _run(self, run: Claimed) -> None:
        try:
            if run.kind == "greeting":
                await self._greet(run)
                return
            if run.acted:  # its worker died after the agent had answered: never twice
                await self._end(run, None, "failed", INTERRUPTED,
                                "the worker stopped during the run, after the agent had answered")
                return
            await self._call(run)
        except asyncio.CancelledError:
            raise
        except Exception:  # a fault of ours: the lease expires and the run is tried again
            log.exception("agent run %s failed unexpectedly", run.run_id)

    async def _greet(self, run: Claimed) -> None:
        """Posts the website's greeting (once: a greeting whose worker died after posting it is done)."""
        if not run.acted and run.greeting:
            await asyncio.to_thread(self.store.append, self._message(run, None, new_id(), run.greeting,
                                                                     incomplete=False))
        await self._mark(run, "succeeded")

    async def _call(self, run: Claimed) -> None:
        async with self.pool.connection() as conn:
            # only this visitor's page context, and of it only what is for everyone or for the signed-in user
            context = await visitor_context(conn, run.org_id, run.customer_id)
            request, reply_to = await run_input(conn, run, str(new_id()), context)
        answer = Answer(self, run, reply_to, {a.name for a in context.actions} if context else set())
        try:
            await self._exchange(run, request, answer)
        except RunFailed as failure:
            if failure.retryable and not answer.started and run.attempts < self.settings.agent_retry_attempts:
                await self._retry_later(run, failure)
                return
            await self._fail(run, answer, failure)
            return
        finally:
            if answer.started:
                await self.typing(run, False)
        if answer.error is not None:
            await self._fail(run, answer, RunFailed(RUN_ERROR, f"RUN_ERROR: {answer.error}"))
        elif not answer.ended:
            await self._fail(run, answer, RunFailed(PROTOCOL_ERROR, "the stream ended without RUN_FINISHED"))
        else:
            await self._end(run, reply_to, "succeeded", handoff=answer.handoff)

    async def _exchange(self, run: Claimed, request: RunAgentInput, answer: Answer) -> None:
        """Sends the request and follows the answer within the time limits."""
        s = self.settings
        loop = asyncio.get_running_loop()
        started = loop.time()
        run_deadline = started + s.agent_run_seconds
        first_deadline = min(run_deadline, started + s.agent_first_event_seconds)
        try:
            async with asyncio.timeout_at(first_deadline):
                response = await self._send(run, request)
        except TimeoutError:
            raise RunFailed(TIMED_OUT, f"no answer within {s.agent_first_event_seconds:g} s") from None
        try:
            check_answer(response)
            events = sse_data(response)
            while True:
                deadline = first_deadline if not answer.started else min(run_deadline, loop.time() + s.agent_idle_seconds)
                try:
                    async with asyncio.timeout_at(deadline):
                        data = await anext(events, None)
                except TimeoutError:
                    raise RunFailed(TIMED_OUT, time_limit(s, answer.started, loop.time() >= run_deadline)) from None
                except httpx.HTTPError as exc:
                    raise RunFailed(PROTOCOL_ERROR, f"the answer broke off: {type(exc).__name__}: {exc}") from None
                if data is None:
                    return
                await answer.feed(data)
        finally:
            await response.aclose()

    async def _send(self, run: Claimed, request: RunAgentInput) -> httpx.Response:
        """The POST, to the address the SSRF guard checked (TLS still verifies the URL's host)."""
        s = self.settings
        try:
            target = parse_target(run.url, allow_private=s.webhook_allow_private)
            address = await resolve(target, allow_private=s.webhook_allow_private)
        except RefusedTarget as exc:
            raise RunFailed(UNREACHABLE, f"refused: {exc}", retryable=True) from None
        url = httpx.URL(run.url).copy_with(host=address)
        default_port = 443 if target.scheme == "https" else 80
        host = target.host if target.port == default_port else f"{target.host}:{target.port}"
        built = self.client.build_request(
            "POST", url, content=request.model_dump_json(by_alias=True).encode(),
            headers={"Host": host, "Content-Type": "application/json", "Accept": "text/event-stream",
                     "Authorization": f"Bearer {run.secret}"},
            extensions={"sni_hostname": target.host} if target.scheme == "https" else {})
        try:
            return await self.client.send(built, stream=True)
        except httpx.TransportError as exc:
            raise RunFailed(UNREACHABLE, f"{type(exc).__name__}: {exc or 'no answer'}", retryable=True) from None

    async def _retry_later(self, run: Claimed, failure: RunFailed) -> None:
        s = self.settings
        ceiling = min(RETRY_CAP_SECONDS, s.agent_retry_base_seconds * 2 ** (run.attempts - 1))
        delay = ceiling * random.uniform(0.5, 1.0)
        if failure.retry_after is not None:
            delay = max(delay, failure.retry_after)
        log.info("agent run %s: %s; calling again in %.1f s", run.run_id, failure.error, delay)
        async with self.pool.connection() as conn:
            await conn.execute("UPDATE agent_runs SET next_attempt_at = now() + %s * interval '1 second', "
                               "error_class = %s, error = %s, updated_at = now() WHERE id = %s",
                               (delay, failure.error_class, failure.error, run.run_id))

    # --- what the run writes

    async def _publish(self, run: Claimed, event: str, payload: dict, operators: bool = True) -> None:
        """A live frame for the visitor's (and the operators') open channels; lost when NATS is away."""
        await self.live.publish(LiveFrame(run.org_id, run.customer_id, operators, event,
                                          msgspec.Raw(msgspec.json.encode(payload))))

    async def typing(self, run: Claimed, typing: bool) -> None:
        await self._publish(run, "agent.typing", {"conversationId": str(run.conversation_id), "typing": typing})

    async def delta(self, run: Claimed, message_id: uuid.UUID, delta: str) -> None:
        await self._publish(run, "message.delta", {"conversationId": str(run.conversation_id),
                                                   "messageId": str(message_id), "delta": delta})

    def _message(self, run: Claimed, reply_to: uuid.UUID | None, message_id: uuid.UUID, content: str, *,
                 incomplete: bool) -> Pending:
        if len(content) > MAX_CONTENT:
            content, incomplete = content[:MAX_CONTENT], True
        return Pending(message_id, 1, ev.MessageCreated(
            org_id=run.org_id, at=now(), message_id=message_id, conversation_id=run.conversation_id,
            website_id=run.website_id, content=content, sender="operator", reply_to=reply_to, author="agent",
            incomplete=incomplete, agent_run_id=run.run_id))

    async def store_text(self, run: Claimed, reply_to: uuid.UUID | None, text: Text, *, incomplete: bool) -> None:
        content = "".join(text.parts)
        if content.strip():  # an agent opens empty text messages around its tool calls
            await asyncio.to_thread(self.store.append, self._message(run, reply_to, text.message_id, content,
                                                                     incomplete=incomplete))

    async def offer(self, run: Claimed, tool_call_id: str, name: str, arguments: str) -> None:
        try:
            await asyncio.to_thread(self.store.append, Pending(action_stream(run.customer_id, tool_call_id), 1,
                                                               ev.AgentActionOffered(
                org_id=run.org_id, at=now(), conversation_id=run.conversation_id, website_id=run.website_id,
                customer_id=run.customer_id, agent_run_id=run.run_id, tool_call_id=tool_call_id, name=name,
                arguments=arguments)))
        except StreamConflict:
            log.warning("agent of website %s offered tool call id %r a second time; ignored", run.website_id,
                        tool_call_id[:60])
            return
        await self._publish(run, "action.offered", {"conversationId": str(run.conversation_id), "toolCallId": tool_call_id,
                                              "name": name, "arguments": arguments}, operators=False)

    async def _fail(self, run: Claimed, answer: Answer, failure: RunFailed) -> None:
        """Keeps what was streamed (incomplete), tells the visitor a teammate will reply, and hands the
        conversation to the team."""
        log.info("agent run %s failed (%s): %s", run.run_id, failure.error_class, failure.error)
        writes = [self._message(run, answer.reply_to, text.message_id, "".join(text.parts), incomplete=True)
                  for text in answer.open_texts() if "".join(text.parts).strip()]
        writes.append(self._message(run, answer.reply_to, new_id(), run.fallback_message or DEFAULT_FALLBACK,
                                    incomplete=False))
        reason = f"the agent's run failed ({failure.error_class}): {failure.error}"
        await self._end(run, answer.reply_to, "failed", failure.error_class, failure.error, writes=writes,
                        handoff=True, reason=reason)

    async def _end(self, run: Claimed, reply_to: uuid.UUID | None, outcome: str, error_class: str | None = None,
                   error: str | None = None, *, writes: list[Pending] = (), handoff: bool = False,
                   reason: str = "the agent handed the conversation to the team") -> None:
        """Records the run's outcome with its last writes, in one append, and frees its conversation."""
        ended = Pending(run.run_id, 1, ev.AgentRunEnded(
            org_id=run.org_id, at=now(), agent_run_id=run.run_id, conversation_id=run.conversation_id,
            website_id=run.website_id, reply_to=reply_to, outcome=outcome, error_class=error_class, error=error))
        while True:
            pending = [*writes, ended]
            if handoff:
                history = await asyncio.to_thread(self.store.load, run.conversation_id)
                pending.append(Pending(run.conversation_id, history[-1].version + 1, ev.ConversationUpdated(
                    org_id=run.org_id, at=now(), conversation_id=run.conversation_id, agent_paused=True,
                    agent_pause_reason=reason[:ERROR_TEXT_LIMIT], handoff=True)))
            try:
                await asyncio.to_thread(self.store.append, *pending)
                break
            except StreamConflict:
                if await asyncio.to_thread(self.store.load, run.run_id):
                    break  # another worker ended this run already
        await self._mark(run, outcome, error_class, error)

    async def _mark(self, run: Claimed, outcome: str, error_class: str | None = None, error: str | None = None) -> None:
        """Frees the conversation for its next run at once (the projection records the same outcome)."""
        async with self.pool.connection() as conn:
            await conn.execute("UPDATE agent_runs SET status = %s, error_class = %s, error = %s, "
                               "next_attempt_at = NULL, updated_at = now() WHERE id = %s",
                               (outcome, error_class, error, run.run_id))


def check_answer(response: httpx.Response) -> None:
    status = response.status_code
    if 200 <= status < 300:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            raise RunFailed(PROTOCOL_ERROR, f"the answer is {response.headers.get('content-type') or 'untyped'}, "
                                            "not text/event-stream")
        return
    if status == 429 or status >= 500:
        raise RunFailed(REFUSED, f"HTTP {status}", retryable=True,
                        retry_after=parse_retry_after(response.headers.get("retry-after")) if status == 429 else None)
    detail = "a redirect, which is not followed" if 300 <= status < 400 else "check the URL and the bearer secret"
    raise RunFailed(REFUSED, f"HTTP {status}: {detail}")


def time_limit(s: AgentSettings, started: bool, whole_run: bool) -> str:
    if whole_run:
        return f"the run took longer than {s.agent_run_seconds:g} s"
    if not started:
        return f"no event within {s.agent_first_event_seconds:g} s"
    return f"no event for {s.agent_idle_seconds:g} s"

