"""Realtime pushes to dashboards and visitors, and visitor presence.

Each API process runs one `Hub`: an ordered JetStream consumer that reads the event log once and fans
each event out in memory to the process's open channels (an operator's organization stream, a visitor's
own stream). Every frame carries the event's position as its SSE `id`. A client that reconnects with
`Last-Event-ID` is replayed what it missed from the event store (the source of truth, so a restart or a
wiped NATS loses nothing) while live events are buffered, and a channel drops any position it already
sent, so nothing is lost and nothing is repeated.

Live frames (the AI agent's streamed text, its typing, the actions it offers; the team's typing) are not
events: a worker, or the API process an operator types in, publishes them on the stream's `live` subject of
NATS (`events.live.LiveConnection`, made again whenever NATS comes back), each hub pushes them to the
channels they are for as they come, without an SSE `id`, and nothing replays them.

An open stream ends within seconds of its credential's revocation: the hub re-checks the credentials its
streams hold every `RECHECK_SECONDS`, with one query when no credential was revoked since (see `recheck`).

What a visitor may see is decided here, once, for every push: their own conversations that are not
operator-only, messages that are not internal notes, and an id-only `MESSAGE_UPDATED_EVENT` after the
team reacts to one of those messages.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import AsyncIterator, Callable, NamedTuple

import msgspec
from msgspec import UNSET, UnsetType
import psycopg
from psycopg_pool import AsyncConnectionPool

from events import stream
from events import types as ev
from events.live import CHANNEL_BACKLOG, Channel, Held, LiveConnection, LiveFrame, live_decoder, live_subject
from events.store import EventStore, Recorded
from events.supervision import keep_running
from commands.deciders.operator import fold_operator
from projections.views.collections import new_conversation, new_message
from projections.views.credentials import credential_generation, standing
from projections.notifications import CHANNEL as NOTIFICATIONS_CHANNEL
from projections.views.identities import OperatorIdentity, identity
from projections.views.notifications import Unread, made_at, unread_count
from projections.views.payloads import message_change
from projections.views.visitors import chat_conversation_of, chat_message_of

log = logging.getLogger("parley.realtime")

MESSAGE_UPDATED = "MESSAGE_UPDATED_EVENT"
HEARTBEAT_SECONDS = 15.0
KEEPALIVE_SLICES = 15  # the channels are kept alive a slice at a time, one slice every second
RECHECK_SECONDS = 2.0  # how long an open stream may outlive its credential's revocation, at most
REPLAY_BATCH = 500
CACHED_CONVERSATIONS = 100_000
CACHED_AUTHORS = 10_000
# what changes how an operator is shown as a message's author
PROFILE_EVENTS = (ev.OperatorProfileChanged, ev.OperatorAvatarSet, ev.OperatorAvatarRemoved)
KEEPALIVE = b": keepalive\n\n"


class MessageUpdate(msgspec.Struct, rename="camel"):
    """The dashboard's `MESSAGE_UPDATED_EVENT`: the message and what changed on it."""

    message_id: uuid.UUID
    conversation_id: uuid.UUID
    rating: str | msgspec.UnsetType = msgspec.UNSET  # the visitor's
    rating_time: datetime | msgspec.UnsetType = msgspec.UNSET
    operator_rating: str | msgspec.UnsetType = msgspec.UNSET  # the team's own
    operator_rating_time: datetime | msgspec.UnsetType = msgspec.UNSET
    reactions: list[ev.Reaction] | msgspec.UnsetType = msgspec.UNSET
    # an edit or a deletion: the new text and its rendering (empty once deleted)
    content: str | msgspec.UnsetType = msgspec.UNSET
    content_html: str | msgspec.UnsetType = msgspec.UNSET
    edited_at: datetime | None | msgspec.UnsetType = msgspec.UNSET
    deleted: bool | msgspec.UnsetType = msgspec.UNSET


class VisitorMessageUpdate(msgspec.Struct, rename="camel"):
    """The visitor's `MESSAGE_UPDATED_EVENT` carries only the id: the widget re-reads the message."""

    message_id: uuid.UUID


class VisitorConversationChange(msgspec.Struct, rename="camel"):
    """What the visitor learns of a change to their conversation: whether it is resolved (the widget then
    asks how the team did)."""

    conversation_id: uuid.UUID
    resolved: bool


class VisitorMessageSeen(msgspec.Struct, rename="camel"):
    """The team has read the visitor's message (the widget shows "seen")."""

    message_id: uuid.UUID
    conversation_id: uuid.UUID
    read_at: datetime


class ConversationChange(msgspec.Struct, rename="camel", omit_defaults=True):
    """What changed of a conversation: only the fields present did. The team's workflow fields are present
    as null when they became null (unassigned, no team, woken)."""

    conversation_id: uuid.UUID
    resolved: bool | None = None
    spam: bool | None = None
    agent_paused: bool | None = None
    agent_pause_reason: str | None = None  # why the agent handed the conversation to the team
    handoff: bool = False
    assignee_id: uuid.UUID | None | UnsetType = UNSET
    team_id: uuid.UUID | None | UnsetType = UNSET
    labels_added: list[uuid.UUID] | UnsetType = UNSET  # label ids (GET /api/labels names them)
    labels_removed: list[uuid.UUID] | UnsetType = UNSET
    priority: str | UnsetType = UNSET
    snoozed: bool | UnsetType = UNSET
    snoozed_until: datetime | None | UnsetType = UNSET


def workflow_change(e: ev.Event) -> ConversationChange | None:
    """The `conversation.updated` frame of a workflow event (assignment, labels, priority, snooze)."""
    if isinstance(e, ev.ConversationAssigned):
        return ConversationChange(e.conversation_id, assignee_id=e.assignee_id, team_id=e.team_id)
    if isinstance(e, ev.ConversationLabelsChanged):
        return ConversationChange(e.conversation_id, labels_added=e.added, labels_removed=e.removed)
    if isinstance(e, ev.ConversationPrioritySet):
        return ConversationChange(e.conversation_id, priority=e.priority)
    if isinstance(e, ev.ConversationSnoozed):
        return ConversationChange(e.conversation_id, snoozed=True, snoozed_until=e.until)
    if isinstance(e, ev.ConversationWoken):
        return ConversationChange(e.conversation_id, snoozed=False, snoozed_until=None)
    return None


class CannedResponseChange(msgspec.Struct):
    """The dashboards' `cannedresponse.changed`: which response was created, changed or deleted, and nothing of
    it (a personal one is its author's only): a dashboard reads the list again."""

    _id: uuid.UUID


class AvailabilityChange(msgspec.Struct, rename="camel"):
    """The dashboards' `operator.availability`: the availability an operator chose."""

    operator_id: uuid.UUID
    status: str


class ConversationFacts(NamedTuple):
    org_id: uuid.UUID
    customer_id: uuid.UUID
    operator_only: bool


def frame(position: int, name: str, payload: msgspec.Struct) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (position, name.encode(), msgspec.json.encode(payload))


def operator_frame(recorded: Recorded, author: OperatorIdentity | None = None) -> bytes | None:
    """What the organization's dashboards receive for an event, or None; `author`: who of the team wrote
    a message."""
    e, at = recorded.event, recorded.position
    if isinstance(e, ev.ConversationCreated):
        return frame(at, "conversation.created", new_conversation(e))
    if isinstance(e, ev.ConversationUpdated):
        return frame(at, "conversation.updated", ConversationChange(e.conversation_id, e.resolved, e.spam,
                                                                    e.agent_paused, e.agent_pause_reason, e.handoff))
    if (change := workflow_change(e)) is not None:
        return frame(at, "conversation.updated", change)
    if isinstance(e, ev.MessageCreated):
        return frame(at, "message.created", new_message(e, author))
    if isinstance(e, ev.MessageRated):
        whose = "operator_rating" if e.sender == "operator" else "rating"
        return frame(at, MESSAGE_UPDATED, MessageUpdate(e.message_id, e.conversation_id,
                                                         **{whose: e.rating, f"{whose}_time": e.at}))
    if isinstance(e, ev.MessageReactionsChanged):
        return frame(at, MESSAGE_UPDATED, MessageUpdate(e.message_id, e.conversation_id,
                                                         reactions=list(e.reactions)))
    if isinstance(e, (ev.MessageEdited, ev.MessageDeleted)):
        change = message_change(e)
        return frame(at, MESSAGE_UPDATED, MessageUpdate(
            e.message_id, e.conversation_id, content=change.content, content_html=change.content_html,
            edited_at=change.edited_at if isinstance(e, ev.MessageEdited) else msgspec.UNSET,
            deleted=change.deleted))
    if isinstance(e, ev.OperatorAvailabilityChanged):
        return frame(at, "operator.availability", AvailabilityChange(e.operator_id, e.status))
    if isinstance(e, (ev.CannedResponseCreated, ev.CannedResponseUpdated, ev.CannedResponseDeleted)):
        return frame(at, "cannedresponse.changed", CannedResponseChange(e.response_id))
    return None


class Hub:
    def __init__(self, store: EventStore, pool: AsyncConnectionPool, nats_url: str, stream_name: str):
        self.store = store
        self.pool = pool
        self.nats_url = nats_url
        self.stream = stream_name
        self.position = 0  # the last position fanned out
        self.operators: dict[uuid.UUID, set[Channel]] = defaultdict(set)
        self.visitors: dict[uuid.UUID, set[Channel]] = defaultdict(set)
        self.visitor_orgs: dict[uuid.UUID, int] = defaultdict(int)
        self.conversations: dict[uuid.UUID, ConversationFacts] = {}
        self.held: dict[Held, Channel | None] = {}  # the credentials open streams hold, with their channels
        self._recheck_failed = False
        # operators' display names and avatar digests, as their streams tell, kept current by the events seen
        self.authors: dict[uuid.UUID, tuple[str | None, str | None]] = {}
        self.closed = False  # set when the server stops serving: no channel may hold it open
        self._moved: asyncio.Future | None = None  # done once the position moves on (see `wait_past`)
        # the live frames workers publish, on a plain NATS subscription made again after every reconnection
        self.live = LiveConnection(nats_url, live_subject(stream_name), "realtime live frames", received=self._live)

    async def start(self) -> list[asyncio.Task]:
        self.position = await asyncio.to_thread(self.store.head)
        return [asyncio.create_task(self.run(), name="realtime-hub"),
                asyncio.create_task(self._keepalive(), name="realtime-keepalive"),
                asyncio.create_task(self._rechecks(), name="realtime-credentials"),
                asyncio.create_task(self.live.run(), name="realtime-live"),
                asyncio.create_task(keep_running("notification frames", self._notifications, log),
                                    name="realtime-notifications")]

    async def publish(self, live: LiveFrame) -> None:
        """A live frame from this process (an operator's typing), for the channels of every process."""
        await self.live.publish(live)

    async def _keepalive(self) -> None:
        """A comment on every idle channel every `HEARTBEAT_SECONDS`, so proxies keep idle streams open: to
        one slice of the channels at a time, so that thousands of streams are not all written in one turn
        of the loop (which would hold up the frames behind them)."""
        turn = 0
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS / KEEPALIVE_SLICES)
            turn = (turn + 1) % KEEPALIVE_SLICES
            for index in (self.operators, self.visitors):
                for members in index.values():
                    for channel in members:
                        if hash(channel) % KEEPALIVE_SLICES == turn and channel.idle():
                            channel.put(0, KEEPALIVE)  # one with frames waiting needs none

    # --- the credentials open streams hold

    def hold(self, held: Held, channel: Channel | None = None) -> None:
        """The stream holding this credential ends when it is revoked: its channel is closed, and
        `held.ended` is done (what a stream without a channel waits on beside its work)."""
        self.held[held] = channel

    def release(self, held: Held) -> None:
        self.held.pop(held, None)

    async def _rechecks(self) -> None:
        while True:
            await asyncio.sleep(RECHECK_SECONDS)
            try:
                await self.recheck()
            except Exception as exc:  # PostgreSQL is away: the streams go on, and are checked once it is back
                if not self._recheck_failed:
                    log.warning("could not re-check the credentials of open streams: %s", exc)
                self._recheck_failed = True
            else:
                self._recheck_failed = False

    async def recheck(self) -> None:
        """Ends the streams whose credential expired or was revoked. One query reads the credential
        generation, which every revocation moves on in its own transaction; only the credentials last found
        standing at an older generation are looked up again, in one query per kind."""
        now = datetime.now(timezone.utc)
        for held in [held for held in self.held if held.expires_at is not None and held.expires_at <= now]:
            self.end(held)
        if not self.held:
            return
        async with self.pool.connection() as conn:
            generation = await credential_generation(conn)
            stale = [held for held in self.held if held.generation < generation]
            ids: dict[str, set[uuid.UUID]] = defaultdict(set)
            for held in stale:
                ids[held.kind].add(held.credential_id)
            still = {kind: await standing(conn, kind, of_kind) for kind, of_kind in ids.items()}
        for held in stale:
            if held.credential_id in still[held.kind]:
                held.generation = max(held.generation, generation)
            elif held in self.held:
                self.end(held)

    def end(self, held: Held) -> None:
        channel = self.held.pop(held, None)
        held.revoke()
        if channel is not None:
            self.close(channel)

    # --- channels

    def open(self, channel: Channel, after: int | None) -> None:
        """Registers the channel; live events past `after` (or from now) are buffered for it at once."""
        channel.last_sent = self.position if after is None else after
        if self.closed:
            channel.end()
            return
        if channel.held is not None:
            self.hold(channel.held, channel)
        if channel.audience == "operator":
            self.operators[channel.org_id].add(channel)
        else:
            self.visitors[channel.customer_id].add(channel)
            self.visitor_orgs[channel.org_id] += 1

    def close(self, channel: Channel) -> None:
        if channel.held is not None:
            self.release(channel.held)
        index = self.operators if channel.audience == "operator" else self.visitors
        key = channel.org_id if channel.audience == "operator" else channel.customer_id
        members = index.get(key)
        if members is None or channel not in members:
            return
        members.discard(channel)
        if not members:
            del index[key]
        if channel.audience == "visitor":
            self.visitor_orgs[channel.org_id] -= 1
            if not self.visitor_orgs[channel.org_id]:
                del self.visitor_orgs[channel.org_id]
        channel.end()  # ends the reader

    def close_all(self) -> None:
        self.closed = True
        self._advanced()
        for index in (self.operators, self.visitors):
            for members in list(index.values()):
                for channel in list(members):
                    self.close(channel)

    async def frames(self, channel: Channel, after: int | None) -> AsyncIterator[bytes]:
        """What to write to the channel: the replay from the store past `after`, then live frames."""
        if after is not None:
            async for position, data in self._replay(channel, after):
                if channel.ended:  # the client left during the replay
                    return
                channel.last_sent = position
                yield data
        while True:
            # whatever queued up meanwhile goes out as one write
            out = []
            for item in await channel.taken():
                if item is None:
                    if out:
                        yield b"".join(out)
                    return
                position, data = item
                if position == 0:  # a keep-alive or a live frame: not in the log, never a duplicate
                    out.append(data)
                elif position > channel.last_sent:
                    channel.last_sent = position
                    out.append(data)
            if out:
                yield b"".join(out)

    async def _replay(self, channel: Channel, after: int) -> AsyncIterator[tuple[int, bytes]]:
        position = after
        while batch := await asyncio.to_thread(self.store.read, position, REPLAY_BATCH):
            for recorded in batch:
                if recorded.event.org_id == channel.org_id:
                    data = await self._frame_for(channel, recorded)
                    if data is not None:
                        yield recorded.position, data
                position = recorded.position

    async def _frame_for(self, channel: Channel, recorded: Recorded) -> bytes | None:
        if channel.audience == "operator":
            return operator_frame(recorded, await self.author(recorded.event))
        found = await self.visitor_frame(recorded, lambda customer: customer == channel.customer_id)
        return found[1] if found and found[0] == channel.customer_id else None

    async def wait_past(self, position: int, timeout: float, held: Held | None = None) -> None:
        """Returns once the hub has seen an event past `position` (the events API's `follow` then reads the
        store again), once the server stops serving, once the `held` credential is revoked, or after
        `timeout`."""
        if self.position > position or self.closed or (held is not None and held.revoked):
            return
        if self._moved is None:
            self._moved = asyncio.get_running_loop().create_future()
        # asyncio.wait leaves the futures as they are, whether it times out or is cancelled
        await asyncio.wait({self._moved} if held is None else {self._moved, held.ended}, timeout=timeout,
                           return_when=asyncio.FIRST_COMPLETED)

    def _advanced(self) -> None:
        if self._moved is not None:
            self._moved.set_result(None)
            self._moved = None

    # --- who wrote a message

    async def author(self, e: ev.Event) -> OperatorIdentity | None:
        """The operator who wrote a message, as shown: read from the operator's stream (the store holds
        every event the hub has seen, so it is never behind it), then kept as the events change it."""
        if not isinstance(e, ev.MessageCreated) or e.operator_id is None:
            return None
        known = self.authors.get(e.operator_id)
        if known is None:
            history = await asyncio.to_thread(self.store.load, e.operator_id)
            if not history or not isinstance(history[0].event, ev.OperatorCreated):
                return None
            operator = fold_operator(history)
            if len(self.authors) >= CACHED_AUTHORS:
                del self.authors[next(iter(self.authors))]
            known = self.authors[e.operator_id] = (operator.display_name, operator.avatar_digest)
        return identity(e.operator_id, *known)

    def _profile_changed(self, e: ev.OperatorProfileChanged | ev.OperatorAvatarSet | ev.OperatorAvatarRemoved) -> None:
        known = self.authors.get(e.operator_id)
        if known is None:
            return
        name, digest = known
        if isinstance(e, ev.OperatorProfileChanged):
            name = e.display_name
        elif isinstance(e, ev.OperatorAvatarSet):
            digest = e.digest
        elif isinstance(e, ev.OperatorAvatarRemoved):
            digest = None
        self.authors[e.operator_id] = (name, digest)

    # --- what a visitor may see

    async def conversation_facts(self, conversation_id: uuid.UUID) -> ConversationFacts | None:
        facts = self.conversations.get(conversation_id)
        if facts is None:
            first = await self.store.first_async(conversation_id)
            if first is None or not isinstance(first.event, ev.ConversationCreated):
                return None
            facts = self._remember(first.event)
        return facts

    def _remember(self, e: ev.ConversationCreated) -> ConversationFacts:
        if len(self.conversations) >= CACHED_CONVERSATIONS:
            del self.conversations[next(iter(self.conversations))]
        facts = self.conversations[e.conversation_id] = ConversationFacts(e.org_id, e.customer_id, e.operator_only)
        return facts

    async def visitor_frame(self, recorded: Recorded,
                            wanted: Callable[[uuid.UUID], bool]) -> tuple[uuid.UUID, bytes] | None:
        """(customer, frame) when the event is one its visitor may see; `wanted` says whose channels are
        open, so a message is only loaded for a visitor who is listening."""
        e, at = recorded.event, recorded.position
        if isinstance(e, ev.ConversationCreated):
            return None if e.operator_only else (e.customer_id, frame(at, "conversation.created",
                                                                      chat_conversation_of(e)))
        if isinstance(e, ev.MessageCreated) and not e.internal:
            facts = await self.conversation_facts(e.conversation_id)
            if facts and not facts.operator_only and wanted(facts.customer_id):
                return facts.customer_id, frame(at, "message.created", chat_message_of(e, await self.author(e)))
        if isinstance(e, ev.ConversationUpdated) and e.resolved is not None:
            facts = await self.conversation_facts(e.conversation_id)
            if facts and not facts.operator_only and wanted(facts.customer_id):
                return facts.customer_id, frame(at, "conversation.updated",
                                                VisitorConversationChange(e.conversation_id, e.resolved))
        if isinstance(e, ev.MessageRead) and e.actor is not None and e.actor.kind != "customer":
            facts = await self.conversation_facts(e.conversation_id)
            if facts and not facts.operator_only and wanted(facts.customer_id):
                message = await self.store.first_async(e.message_id)
                if message is not None and message.event.sender == "customer":
                    return facts.customer_id, frame(at, "message.read",
                                                    VisitorMessageSeen(e.message_id, e.conversation_id, e.at))
        if isinstance(e, (ev.MessageEdited, ev.MessageDeleted)) and not e.internal:
            facts = await self.conversation_facts(e.conversation_id)
            if facts and not facts.operator_only and wanted(facts.customer_id):
                return facts.customer_id, frame(at, MESSAGE_UPDATED, VisitorMessageUpdate(e.message_id))
        if isinstance(e, ev.MessageReactionsChanged) and e.sender == "operator":
            facts = await self.conversation_facts(e.conversation_id)
            if facts and not facts.operator_only and wanted(facts.customer_id):
                message = await self.store.first_async(e.message_id)
                if message is not None and not message.event.internal:
                    return facts.customer_id, frame(at, MESSAGE_UPDATED, VisitorMessageUpdate(e.message_id))
        return None

    # --- the live feed

    async def dispatch(self, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, ev.ConversationCreated):
            self._remember(e)
        elif isinstance(e, PROFILE_EVENTS):
            self._profile_changed(e)
        if self.operators.get(e.org_id) and (data := operator_frame(recorded, await self.author(e))) is not None:
            self._deliver(self.operators[e.org_id], recorded.position, data)
        if self.visitor_orgs.get(e.org_id):
            found = await self.visitor_frame(recorded, lambda customer: customer in self.visitors)
            if found and found[0] in self.visitors:
                self._deliver(self.visitors[found[0]], recorded.position, found[1])
        self.position = recorded.position
        self._advanced()

    async def _live(self, msg) -> None:
        try:
            live = live_decoder.decode(msg.data)
        except msgspec.DecodeError:
            log.warning("dropped a malformed live frame")
            return
        data = b"event: %s\ndata: %s\n\n" % (live.event.encode(), bytes(live.data))
        if live.operators and (operators := self.operators.get(live.org_id)):
            self._deliver(operators, 0, data)
        if live.customer_id is not None and (visitors := self.visitors.get(live.customer_id)):
            self._deliver(visitors, 0, data)

    # --- an operator's notifications

    async def _notifications(self) -> None:
        """Pushes each operator's new notifications, and their unread count after a read, to their open
        streams: the notifications projection tells, by a PostgreSQL notice after its commit, which event made
        some (`created:<org>:<position>`) or whose were read (`read:<org>:<operator>`)."""
        async with await psycopg.AsyncConnection.connect(self.pool.conninfo, autocommit=True) as conn:
            await conn.execute(f"LISTEN {NOTIFICATIONS_CHANNEL}")
            async for notice in conn.notifies():
                what, _, rest = notice.payload.partition(":")
                org, _, about = rest.partition(":")
                org_id = uuid.UUID(org)
                listening = {c.operator_id: c for c in self.operators.get(org_id, ()) if c.operator_id}
                if not listening:
                    continue
                async with self.pool.connection() as reader:
                    if what == "created":
                        for operator_id, pushed in await made_at(reader, org_id, int(about), listening):
                            self._to_operator(org_id, operator_id, "notification.created", pushed)
                    elif what == "read" and uuid.UUID(about) in listening:
                        self._to_operator(org_id, uuid.UUID(about), "notifications.read",
                                          Unread(await unread_count(reader, org_id, uuid.UUID(about))))

    def _to_operator(self, org_id: uuid.UUID, operator_id: uuid.UUID, name: str, payload: msgspec.Struct) -> None:
        data = b"event: %s\ndata: %s\n\n" % (name.encode(), msgspec.json.encode(payload))
        self._deliver({c for c in self.operators.get(org_id, ()) if c.operator_id == operator_id}, 0, data)

    def _deliver(self, channels: set[Channel], position: int, data: bytes) -> None:
        for channel in list(channels):
            if not channel.put(position, data):
                log.info("closing a realtime channel that fell %d frames behind", CHANNEL_BACKLOG)
                self.close(channel)

    async def run(self) -> None:
        """Fans the log out as a `stream.Tail` brings it: from the stream, or from the store while NATS is
        down, so channels go on receiving events through an outage. With nobody listening, a message is
        not even decoded (a channel opened later replays from the store)."""
        while True:
            tail = stream.Tail(self.store, self.nats_url, self.stream, name="realtime hub",
                               wanted=lambda: bool(self.operators or self.visitor_orgs))
            try:
                async with aclosing(tail.batches(self.position)) as batches:
                    async for batch in batches:
                        for recorded in batch:
                            await self.dispatch(recorded)
                        if tail.position > self.position:  # events passed over, with nobody to tell
                            self.authors.clear()  # a profile may have changed among them
                            self.position = tail.position
                            self._advanced()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("realtime hub failed; resuming from position %s", self.position)
                await asyncio.sleep(0.5)


PRESENCE_DDL = """
CREATE TABLE IF NOT EXISTS parley_presence_instances (
    instance_id uuid PRIMARY KEY, expires_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS parley_presence_connections (
    connection_id uuid PRIMARY KEY,
    instance_id uuid NOT NULL REFERENCES parley_presence_instances ON DELETE CASCADE,
    customer_id uuid NOT NULL, org_id uuid NOT NULL, website_id uuid NOT NULL, opened_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS parley_presence_connections_customer ON parley_presence_connections (customer_id);
CREATE INDEX IF NOT EXISTS parley_presence_connections_website ON parley_presence_connections (website_id, customer_id);
CREATE OR REPLACE VIEW parley_presence AS
    SELECT c.customer_id, c.org_id, c.website_id, count(*)::integer AS connections, max(c.opened_at) AS updated_at
    FROM parley_presence_connections c JOIN parley_presence_instances i USING (instance_id)
    WHERE i.expires_at > now()
    GROUP BY c.customer_id, c.org_id, c.website_id;
"""
PRESENCE_LOCK = 0x70726573  # serializes the DDL between API processes starting together


class Presence:
    """Which visitors hold an open channel. Ephemeral, so not event-sourced: each API process records
    its open visitor channels under its own instance row, which it renews every third of the TTL. A
    crashed process stops renewing, so its visitors read as offline once the TTL passes, and its rows
    are deleted by the next process's heartbeat. `parley_presence` is the one-row-per-online-visitor view.
    """

    def __init__(self, pool: AsyncConnectionPool, ttl_seconds: float):
        self.pool = pool
        self.ttl = ttl_seconds
        self.instance_id = uuid.uuid4()
        self._closing: set[asyncio.Task] = set()

    async def start(self) -> asyncio.Task:
        async with self.pool.connection() as conn:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PRESENCE_LOCK,))
                await conn.execute(PRESENCE_DDL)
            await self._renew(conn)
        return asyncio.create_task(self._heartbeat(), name="presence")

    async def _renew(self, conn) -> None:
        await conn.execute(
            "INSERT INTO parley_presence_instances (instance_id, expires_at) "
            "VALUES (%s, now() + make_interval(secs => %s)) "
            "ON CONFLICT (instance_id) DO UPDATE SET expires_at = EXCLUDED.expires_at", (self.instance_id, self.ttl))
        await conn.execute("DELETE FROM parley_presence_instances WHERE expires_at < now() - make_interval(secs => %s)",
                           (self.ttl,))

    async def _heartbeat(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.ttl / 3)
                try:
                    async with self.pool.connection() as conn:
                        await self._renew(conn)
                except Exception:
                    log.exception("presence heartbeat failed")
        finally:
            async with self.pool.connection() as conn:
                await conn.execute("DELETE FROM parley_presence_instances WHERE instance_id = %s",
                                   (self.instance_id,))

    async def opened(self, connection_id: uuid.UUID, customer_id: uuid.UUID, org_id: uuid.UUID,
                     website_id: uuid.UUID) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO parley_presence_connections (connection_id, instance_id, customer_id, org_id, "
                "website_id, opened_at) VALUES (%s, %s, %s, %s, %s, now())",
                (connection_id, self.instance_id, customer_id, org_id, website_id))

    def closed(self, connection_id: uuid.UUID) -> None:
        """Called from a stream's cleanup, which may be cancelled itself: the delete runs as its own task."""
        task = asyncio.create_task(self._delete(connection_id))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _delete(self, connection_id: uuid.UUID) -> None:
        async with self.pool.connection() as conn:
            await conn.execute("DELETE FROM parley_presence_connections WHERE connection_id = %s", (connection_id,))


@dataclass
class Realtime:
    hub: Hub
    presence: Presence


async def start_realtime(store: EventStore, pool: AsyncConnectionPool, nats_url: str, nats_stream: str,
                         presence_ttl_seconds: float) -> tuple[Realtime, list[asyncio.Task]]:
    """The API process's realtime services, and the tasks that keep them running."""
    hub = Hub(store, pool, nats_url, nats_stream)
    presence = Presence(pool, presence_ttl_seconds)
    tasks = [*await hub.start(), await presence.start()]
    return Realtime(hub, presence), tasks
