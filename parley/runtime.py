"""The composition root: where PostgreSQL and NATS are, and what runs in this process.

`Infrastructure` finds the servers: the `PARLEY_*_URL` ones, those of a `parley serve` already running
on the data directory, or embedded ones started here. `Runtime` wires the event store, the relay, the
projections and the API for a role (`api`, `workers` or `all`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import secrets
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


from commands.attachments import AttachmentSettings
from delivery.agent import AgentSettings, Worker as AgentWorker
from delivery.attachments import Sweeper
from delivery.assignment import Assigner
from delivery.away import AwayReplier
from delivery.campaigns import Sender
from delivery.mail import Mailer, MailSettings
from delivery.mail_inbound import InboundSettings, start_listener
from delivery.snooze import Waker
from delivery.webhooks import Dispatcher, WebhookSettings
from events.blobs import blob_store
from events.sealing import Sealer, check_key
from events.store import EventStore, RecoveringPool
from events.stream import Relay
from parley.embedded import EmbeddedNats, EmbeddedPostgres, _pid_alive, kill_group, private_secret, write_private
from parley.settings import Settings, narrowed
from projections.attachments import AttachmentsProjection
from projections.audit import AuditProjection
from projections.assignment import AssignmentProjection
from projections.campaigns import CampaignsProjection
from projections.activity import ActivityProjection
from projections.reports import ReportsProjection
from projections.agent import AgentProjection
from projections.chat import ChatProjection
from projections.core import CoreProjection
from projections.inbox import InboxProjection
from projections.canned_responses import CannedResponsesProjection
from projections.conversation_search import ConversationSearchProjection
from projections.mail import MailProjection
from projections.documents import DocumentsProjection
from projections.search import SearchConfig, SearchProjection, warm_up
from projections.runner import Projection, ProjectionRunner, ensure_tables
from projections.sandbox import SandboxProjection
from projections.webhooks import WebhookProjection
from projections.sso import SsoProjection
from projections.views.attachments import LINKS
from projections.notifications import NotificationsProjection
from projections.hours import HoursProjection

log = logging.getLogger("parley")

SUPERVISE_SECONDS = 0.2  # how often the embedded servers are checked
# An embedded server that exits is started again after 0.25, 0.5, 1, 2, 4 s (about 8 s in all, plus its
# start-up each time); one that still does not start means something outside us is wrong (a full disk,
# a damaged data directory): the service exits, naming it, for an outer supervisor and a person to see.
RESTART_ATTEMPTS = 5
FIRST_RESTART_DELAY = 0.25
STOP_SECONDS = 3.0  # the most `Runtime.stop` waits for its tasks and connections


class EmbeddedServerLost(Exception):
    """An embedded server exited and could not be started again."""

# Every read model, by the name `parley projections rebuild NAME` takes.
PROJECTIONS: dict[str, Callable[[Settings], Projection]] = {
    "core": lambda settings: CoreProjection(),
    "chat": lambda settings: ChatProjection(),
    "sandbox": lambda settings: SandboxProjection(),
    "inbox": lambda settings: InboxProjection(),
    "conversation_search": lambda settings: ConversationSearchProjection(),
    "canned_responses": lambda settings: CannedResponsesProjection(),
    "activity": lambda settings: ActivityProjection(),
    "reports": lambda settings: ReportsProjection(),
    "webhooks": lambda settings: WebhookProjection(),
    "agent": lambda settings: AgentProjection(),
    "documents": lambda settings: DocumentsProjection(),
    "campaigns": lambda settings: CampaignsProjection(),
    "assignment": lambda settings: AssignmentProjection(),
    "audit": lambda settings: AuditProjection(),
    "sso": lambda settings: SsoProjection(),
    "notifications": lambda settings: NotificationsProjection(),
    "hours": lambda settings: HoursProjection(),
    # after core: it reads the operators and customers core keeps, in the same transaction
    "mail": lambda settings: MailProjection(settings.notify_digest_seconds, enabled=bool(settings.smtp_url)),
    "search": lambda settings: SearchProjection(search_config(settings)),
    "attachments": lambda settings: AttachmentsProjection(),
}
# Search embeds the documents it indexes, which is slow, so it runs alone rather than hold back the
# others; every other read model shares one stream consumer and one transaction per batch.
RUNS_ALONE = ("search",)
# Each API process's embedded index (Qdrant Edge) is its own; only the one holding the search read model
# fills it. Another API process (PARLEY_QDRANT_URL unset) would search an empty or stale index: it says so.
EMBEDDED_INDEX_ELSEWHERE = (
    "search is unavailable in this API process: without PARLEY_QDRANT_URL each API process has its own embedded "
    "index, and another API process keeps the only one that is filled; set PARLEY_QDRANT_URL to share a Qdrant "
    "server between API processes, or run one API process")
# Background consumers that are not read models (deliveries): name -> the worker built with what it
# needs (None: not configured, not started); each runs `worker.run()`.
WORKERS: dict[str, Callable[["Runtime"], Any]] = {
    "webhooks": lambda r: Dispatcher(r.store, r.database_url, narrowed(r.settings, WebhookSettings), r.sealer),
    "campaigns": lambda r: Sender(r.store, r.database_url, r.settings.campaign_batch_size,
                                  r.settings.leader_lease_seconds),
    "snooze": lambda r: Waker(r.store, r.database_url, r.settings.leader_lease_seconds),
    "assignment": lambda r: Assigner(r.store, r.database_url, r.settings.leader_lease_seconds),
    "away": lambda r: AwayReplier(r.store, r.database_url),
    "agent": lambda r: AgentWorker(r.store, r.database_url, r.nats_url, narrowed(r.settings, AgentSettings),
                                   r.sealer),
    "mail": lambda r: Mailer(r.database_url, mail_settings(r.settings), r.sealer, r.settings.notify_digest_seconds,
                             r.settings.leader_lease_seconds) if r.settings.smtp_url else None,
    "attachments": lambda r: Sweeper(r.store, r.database_url, r.blobs),
}


def mail_settings(settings: Settings) -> MailSettings:
    """Links in e-mails point at PARLEY_PUBLIC_URL, else at the address the API listens on."""
    return narrowed(settings, MailSettings, base_url=settings.public_url or f"http://{settings.host}:{settings.port}")


def search_config(settings: Settings) -> SearchConfig:
    return SearchConfig(settings.data_dir, settings.qdrant_url)


def private_folder(path: Path) -> None:
    """The data directory, made if needed, closed to other users: it holds the servers' credentials (as
    root, the embedded PostgreSQL's system user is then let through to its own folder)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)


def secrets_key(settings: Settings) -> str:
    """PARLEY_SECRETS_KEY, else the data directory's `secrets.key` (0600), made on the first start."""
    if settings.secrets_key:
        return settings.secrets_key
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return private_secret(settings.data_dir / "secrets.key")


def secrets_sealer(settings: Settings) -> Sealer:
    """What seals the secrets stored in the database."""
    return Sealer(secrets_key(settings))


def attachment_settings(settings: Settings) -> AttachmentSettings:
    return narrowed(settings, AttachmentSettings, staging=settings.data_dir / "attachments" / "staging")


def configure_file_links(settings: Settings, base_url: Callable[[], str]) -> None:
    """The process's signer of attachment links, under a key derived from the secrets key (every process of
    a deployment shares it, so a link one made, another serves)."""
    key = hashlib.sha256(b"parley attachment links\0" + secrets_key(settings).encode()).digest()
    LINKS.configure(key, base_url, settings.attachment_link_seconds)


def server_file(data_dir: Path) -> Path:
    return data_dir / "server.json"


@dataclass
class Infrastructure:
    settings: Settings
    database_url: str = ""
    nats_url: str = ""
    started: list[Any] = field(default_factory=list)

    def start(self, *, reuse_running: bool) -> "Infrastructure":
        s = self.settings
        self.database_url, self.nats_url = s.database_url or "", s.nats_url or ""
        if self.database_url and self.nats_url:
            return self
        if reuse_running and (running := running_server(s.data_dir)):
            self.database_url = self.database_url or running["database_url"]
            self.nats_url = self.nats_url or running["nats_url"]
            return self
        private_folder(s.data_dir)
        if not self.database_url:
            postgres = EmbeddedPostgres(s.data_dir.resolve() / "postgres", durable=s.embedded_fsync)
            postgres.start()
            self.started.append(postgres)
            self.database_url = postgres.url
        if not self.nats_url:
            nats_server = EmbeddedNats(s.data_dir.resolve() / "nats")
            nats_server.start()
            self.started.append(nats_server)
            self.nats_url = nats_server.url
        return self

    def publish(self, base_url: str) -> None:
        """Tells `parley admin` on the same data directory where this server's PostgreSQL and NATS are; the
        URLs carry their credentials, so only this user reads it."""
        self.settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private(server_file(self.settings.data_dir), json.dumps({
            "pid": os.getpid(), "base_url": base_url,
            "database_url": self.database_url, "nats_url": self.nats_url,
        }))

    async def supervise(self) -> None:
        """Starts again, on the same port, an embedded server that exits (a crash, a kill -9): everything
        that used it reconnects to the same URL by itself. Raises `EmbeddedServerLost` when one cannot be
        brought back."""
        while True:
            await asyncio.sleep(SUPERVISE_SECONDS)
            for server in self.started:
                if (code := server.exited()) is not None:
                    await self._restart(server, code)

    async def _restart(self, server, code: int) -> None:
        log.error("the embedded %s (pid %s) exited with %s; restarting it on port %s", server.what,
                  server.proc.pid, code, server.port)
        kill_group(server.proc.pid)  # what it left behind would hold its resources
        delay, failure = FIRST_RESTART_DELAY, ""
        for attempt in range(1, RESTART_ATTEMPTS + 1):
            await asyncio.sleep(delay)
            try:
                await asyncio.to_thread(server.start)
            except Exception as exc:  # noqa: BLE001 - reported, then tried again
                failure = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                log.warning("restart %d of the embedded %s failed: %s", attempt, server.what, failure)
                delay *= 2
                continue
            log.warning("the embedded %s is back (pid %s, port %s)", server.what, server.proc.pid, server.port)
            return
        raise EmbeddedServerLost(f"the embedded {server.what} exited with {code} and could not be restarted "
                                 f"({RESTART_ATTEMPTS} attempts; the last: {failure}); see its log under "
                                 f"{server.root}")

    def kill(self) -> None:
        """The last resort of a stop that overran its time: no embedded server outlives us."""
        for server in self.started:
            if server.proc is not None:
                kill_group(server.proc.pid)

    def stop(self) -> None:
        path = server_file(self.settings.data_dir)
        if path.exists() and json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
        for server in reversed(self.started):
            server.stop()
        self.started.clear()


def running_server(data_dir: Path) -> dict | None:
    path = server_file(data_dir)
    if not path.exists():
        return None
    info = json.loads(path.read_text())
    return info if _pid_alive(info["pid"]) else None


def running_data_dir(start: Path) -> Path | None:
    """The nearest `.parley` folder, in `start` or above it, whose server is running: `parley admin` run
    anywhere inside the folder where `parley serve` was started talks to that server."""
    for folder in (start, *start.parents):
        if running_server(folder / ".parley"):
            return folder / ".parley"
    return None


def prepare_loop(*signals: signal.Signals) -> asyncio.Event:
    """Readies the running loop of a process that runs a `Runtime`; the event is set on `signals`."""
    loop = asyncio.get_running_loop()
    # Commands block a worker thread for their database round trips (and group-commit followers wait
    # on the leader), so the default of cores + 4 threads would throttle concurrent writes.
    loop.set_default_executor(ThreadPoolExecutor(max_workers=64, thread_name_prefix="parley"))
    stop = asyncio.Event()
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    return stop


class Runtime:
    def __init__(self, settings: Settings, database_url: str, nats_url: str):
        self.settings = settings
        self.database_url = database_url
        self.nats_url = nats_url
        self.store = EventStore(database_url, pool_size=max(4, settings.db_pool_size // 2),
                                wait_seconds=settings.database_wait_seconds)
        self.projections = {name: make(settings) for name, make in PROJECTIONS.items()}
        self.sealer = secrets_sealer(settings)
        self.blobs = blob_store(settings.storage_url, settings.data_dir)
        configure_file_links(settings, self.links_base)
        self.tasks: list[asyncio.Task] = []
        self.pool: RecoveringPool | None = None
        self.services = None
        self.on_stop_serving: list[Callable[[], None]] = []

    def links_base(self) -> str:
        """The base of attachment links: the public URL, else where this process's API listens, else (a
        workers process) where the API on the same data directory said it listens, else the settings'."""
        if self.settings.public_url:
            return self.settings.public_url
        if self.services and self.services.base_url:
            return self.services.base_url
        running = running_server(self.settings.data_dir)
        return (running or {}).get("base_url") or f"http://{self.settings.host}:{self.settings.port}"

    @property
    def search_with_api(self) -> bool:
        """The embedded index (Qdrant Edge) admits one process: the API, which searches it, also keeps it."""
        return not self.settings.qdrant_url

    async def start_workers(self) -> None:
        await asyncio.to_thread(check_key, self.database_url, self.sealer)
        self.tasks.append(asyncio.create_task(
            Relay(self.database_url, self.nats_url, self.settings.nats_stream,
                  lease_seconds=self.settings.leader_lease_seconds,
                  replicas=self.settings.nats_replicas).run(), name="relay"))
        shared = [projection for name, projection in self.projections.items() if name not in RUNS_ALONE]
        self._run_projections(shared)
        for name in RUNS_ALONE:
            if not (name == "search" and self.search_with_api):
                self._run_projections([self.projections[name]])
        for name, build in WORKERS.items():
            if (worker := build(self)) is not None:
                self.tasks.append(asyncio.create_task(worker.run(), name=f"worker:{name}"))
        if not self.search_with_api:  # the search read model runs here: it indexes the first document saved at once
            warm_up(search_config(self.settings))

    def _run_projections(self, group: list[Projection], on_reached=None) -> ProjectionRunner:
        runner = ProjectionRunner(group, self.store, self.database_url, self.nats_url, self.settings.nats_stream,
                                  on_reached, self.settings.leader_lease_seconds)
        self.tasks.append(asyncio.create_task(runner.run(), name=f"projections:{runner.name}"))
        return runner

    async def create_app(self):
        from delivery.realtime import start_realtime
        from readapi.app import create_app
        from readapi.consistency import PositionWatch
        from projections.views.cursors import cursor_key
        from projections.views.operators import any_operator
        from mcp_server.service import McpService
        from readapi.services import ApiSettings, Services

        wait = self.settings.database_wait_seconds  # a request never waits longer for a connection: 503
        self.pool = RecoveringPool(self.database_url, 2, self.settings.db_pool_size, wait)
        await self.pool.open(wait=True)
        await asyncio.to_thread(check_key, self.database_url, self.sealer)
        await self.store.open_async()
        async with self.pool.connection() as conn:
            await ensure_tables(conn, *self.projections.values())
            await cursor_key(conn)
        watch = PositionWatch(self.database_url, self.settings.read_wait_seconds)
        await watch.start()
        api_settings = narrowed(self.settings, ApiSettings, search=search_config(self.settings))
        realtime, tasks = await start_realtime(self.store, self.pool, self.nats_url, self.settings.nats_stream,
                                               self.settings.presence_ttl_seconds)
        self.services = Services(api_settings, self.store, self.pool, watch, self.sealer, self.blobs,
                                 attachment_settings(self.settings), self.nats_url, realtime.hub, realtime.presence)
        async with self.pool.connection() as conn:
            if not await any_operator(conn):
                self.services.setup_code = secrets.token_urlsafe(12)
        self.tasks.extend(tasks)
        self.on_stop_serving.append(realtime.hub.close_all)  # open streams would hold the server's shutdown
        if self.settings.smtp_inbound:  # replies by e-mail: posted through this process's store, like the API's
            inbound = await start_listener(self.store, self.sealer, narrowed(self.settings, InboundSettings))
            self.on_stop_serving.append(inbound.close)
        if self.search_with_api:
            search = self._run_projections([self.projections["search"]], watch.observe)  # reads here are told at once
            self.services.search_unavailable = lambda: EMBEDDED_INDEX_ELSEWHERE if search.standby else None
        return create_app(self.services, McpService(self.services))

    async def stop(self) -> None:
        """Stops the tasks and closes the connections, within STOP_SECONDS whatever state PostgreSQL and
        NATS are in (a task stuck on a dead connection is left behind: the process is exiting)."""
        for task in self.tasks:
            task.cancel()
        try:
            async with asyncio.timeout(STOP_SECONDS):
                await asyncio.gather(*self.tasks, return_exceptions=True)
                if self.services:
                    await self.services.watch.stop()
                if self.pool:
                    await self.pool.close(timeout=1.0)
                await self.store.close_async()
                await asyncio.to_thread(self.store.close)
        except TimeoutError:
            log.warning("stopping overran %s s; leaving the rest to the process's exit", STOP_SECONDS)
