"""What the fault-injection suite and `bench/faults.py` / `bench/soak.py` share: `parley serve` on the
embedded default, a steady load of writes and reads from several clients (API keys and chat sessions),
the faults (real kills of real processes), the probe that says when the service has recovered, and the
checks that nothing was lost or doubled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import httpx
import psutil
import psycopg

from parley.embedded import free_port
from tests.support.servers import Server, Tenant, make_tenant
from tests.support.receivers import Receiver

ROOT = Path(__file__).resolve().parents[2]
# A request that takes longer than this hung: PARLEY_DATABASE_WAIT_SECONDS (2) and PARLEY_READ_WAIT_SECONDS
# (2) bound what the service waits for, and a busy shared machine adds the rest.
REQUEST_TIMEOUT = 10.0
LIMITS = dict(PARLEY_RATE_ANONYMOUS_PER_MINUTE="1000000", PARLEY_RATE_APIKEY_PER_MINUTE="1000000",
              PARLEY_RATE_OPERATOR_PER_MINUTE="1000000", PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="1000000")
HOOKS = dict(PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_WEBHOOK_RETRY_BASE_SECONDS="0.2",
             PARLEY_WEBHOOK_RETRY_CAP_SECONDS="1", PARLEY_WEBHOOK_TIMEOUT_SECONDS="2")


def embedded_env(**extra: str) -> dict[str, str]:
    """The embedded default, durable (an acknowledged write must survive a kill -9 of PostgreSQL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env.update(PARLEY_LOG_LEVEL="WARNING", **LIMITS, **HOOKS, **extra)
    return env


class Service(Server):
    """`parley serve` with its own embedded PostgreSQL and NATS, on a fixed port so that clients find it
    again after a restart."""

    def __init__(self, data_dir: Path, **env: str):
        super().__init__("", "", embedded_env(**env), data_dir)
        self.port = free_port()

    def start(self, *args: str, timeout: float = 180) -> "Service":
        super().start("--port", str(self.port), *args, timeout=timeout)
        self.database_url = self.info()["database_url"]
        return self

    def info(self) -> dict:
        return json.loads((self.data_dir / "server.json").read_text())

    def postgres_pid(self) -> int:
        return int((self.data_dir / "postgres" / "pgdata" / "postmaster.pid").read_text().split()[0])

    def nats_pid(self) -> int:
        return int((self.data_dir / "nats" / "nats.pid").read_text())

    def process_ids(self) -> dict[str, list[int]]:
        """Every process of the service by role (the API, the workers, PostgreSQL's, NATS)."""
        roles: dict[str, list[int]] = {"api": [self.proc.pid], "workers": [], "postgres": [], "nats": []}
        for process in self.children():
            try:
                name, command = process.name(), " ".join(process.cmdline())
            except psutil.Error:
                continue
            role = ("postgres" if name == "postgres" else "nats" if name == "nats-server"
                    else "workers" if "spawn_main" in command else None)
            if role:
                roles[role].append(process.pid)
        return roles

    def terminate(self) -> float:
        """SIGTERM; the seconds until the service exited."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        return time.monotonic() - started


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def kill_postgres(service: Service) -> None:
    kill(service.postgres_pid())


def kill_nats(service: Service) -> None:
    kill(service.nats_pid())


def kill_workers(service: Service) -> None:
    [workers] = service.workers_processes()
    workers.kill()


def kill_api(service: Service) -> None:
    """kill -9 of `parley serve` itself; an outer supervisor (here: this function) starts it again on the
    same data directory, where its embedded servers are left running and its pid files stale."""
    workers = service.workers_processes()
    service.proc.kill()
    service.proc.wait()
    psutil.wait_procs(workers, timeout=15)  # they notice their parent is gone and stop
    service.start()


FAULTS: dict[str, Callable[[Service], None]] = {
    "postgres": kill_postgres, "nats": kill_nats, "workers": kill_workers, "api": kill_api,
}


@dataclass
class Answer:
    at: float  # when the request was sent (monotonic)
    seconds: float
    status: int  # 0: no HTTP answer (the connection failed: the API process was down)
    kind: str


@dataclass
class Load:
    """Writers (API keys and visitors' chat sessions, one conversation each) and a reader, at full speed
    or at `rate` requests per second per client. Every answer is kept; a write's message id is kept once
    it is acknowledged (200)."""

    base_url: str
    tenant: Tenant
    clients: int = 4
    rate: float | None = None
    answers: list[Answer] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> "Load":
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            for n in range(self.clients):
                write = self._api_key_writer(client) if n % 2 == 0 else self._visitor_writer(client)
                self._threads.append(threading.Thread(target=self._run, args=(write, f"writer{n}"), daemon=True))
            self._threads.append(threading.Thread(target=self._run, args=(self._reader(client), "reader"),
                                                  daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> "Load":
        self._stop.set()
        for thread in self._threads:
            thread.join(REQUEST_TIMEOUT * 2)
        return self

    def _api_key_writer(self, client: httpx.Client) -> Callable[[httpx.Client], tuple[str, httpx.Response]]:
        customer = client.post("/api/customers", headers=self.tenant.operator,
                               json={"websiteId": str(self.tenant.website_id)}).json()["_id"]
        conversation = client.post("/api/conversations", headers=self.tenant.operator, json={
            "websiteId": str(self.tenant.website_id), "customerId": customer}).json()["_id"]
        key = self.tenant.key("messages:write,messages:read")

        def write(http: httpx.Client) -> tuple[str, httpx.Response]:
            return "apikey", http.post("/api/messages", headers=key, json={
                "conversationId": conversation, "content": uuid.uuid4().hex, "from": "operator"})
        return write

    def _visitor_writer(self, client: httpx.Client) -> Callable[[httpx.Client], tuple[str, httpx.Response]]:
        session = client.post("/api/chat/sessions", json={"websiteId": str(self.tenant.website_id)}).json()
        headers = {"Authorization": f"ChatSession {session['sessionToken']}"}
        conversation = client.post("/api/chat/conversations", headers=headers).json()["_id"]

        def write(http: httpx.Client) -> tuple[str, httpx.Response]:
            return "visitor", http.post("/api/chat/messages", headers=headers, json={
                "conversationId": conversation, "content": uuid.uuid4().hex})
        return write

    def _reader(self, client: httpx.Client) -> Callable[[httpx.Client], tuple[str, httpx.Response]]:
        key = self.tenant.key("conversations:read")

        def read(http: httpx.Client) -> tuple[str, httpx.Response]:
            return "read", http.get("/api/conversations", headers=key, params={"limit": "5"})
        return read

    def _run(self, request: Callable[[httpx.Client], tuple[str, httpx.Response]], name: str) -> None:
        http = httpx.Client(base_url=self.base_url, timeout=REQUEST_TIMEOUT)
        while not self._stop.is_set():
            at = time.monotonic()
            try:
                kind, response = request(http)
                status = response.status_code
                if status == 200 and kind != "read":
                    self.acknowledged.append(response.json()["_id"])
            except httpx.TimeoutException:
                kind, status = name, 0
                self.hung.append(name)
            except httpx.TransportError:  # refused or reset: the API process is down
                kind, status = name, 0
                http.close()
                http = httpx.Client(base_url=self.base_url, timeout=REQUEST_TIMEOUT)
                time.sleep(0.05)
            self.answers.append(Answer(at, time.monotonic() - at, status, kind))
            if self.rate:
                time.sleep(max(0.0, at + 1 / self.rate - time.monotonic()))
        http.close()

    def between(self, start: float, end: float) -> list[Answer]:
        return [a for a in self.answers if start <= a.at < end]


def probe(service: Service, tenant: Tenant, conversation: str, reader: dict[str, str], deadline: float) -> float:
    """Waits until a write is acknowledged and then seen by another credential's list; returns when
    (monotonic). The service has recovered from a fault then."""
    last = "no answer"
    with httpx.Client(base_url=f"http://127.0.0.1:{service.port}", timeout=REQUEST_TIMEOUT) as client:
        while time.monotonic() < deadline:
            try:
                written = client.post("/api/messages", headers=tenant.operator, json={
                    "conversationId": conversation, "content": "probe", "from": "operator"})
                last = f"write {written.status_code} {written.text[:200]}"
                if written.status_code == 200:
                    listed = client.get("/api/messages", headers=reader, params={"conversationId": conversation})
                    last = f"read {listed.status_code} {listed.text[-200:]}"
                    if listed.status_code == 200 and listed.json()[-1]["_id"] == written.json()["_id"]:
                        return time.monotonic()
            except httpx.TransportError as exc:
                last = repr(exc)
            time.sleep(0.1)
    raise AssertionError(f"the service did not recover in time; the probe's last answer: {last}; "
                         f"{positions(service)}; its last words:\n" + "".join(service.output[-40:]))


def positions(service: Service) -> str:
    try:
        with psycopg.connect(service.info()["database_url"], connect_timeout=5) as conn:
            head = conn.execute("SELECT max(notification_id) FROM parley_events").fetchone()[0]
            read_models = conn.execute("SELECT name, position FROM parley_projection_positions").fetchall()
            busy = conn.execute("SELECT state, wait_event, left(query, 80) FROM pg_stat_activity "
                                "WHERE datname = current_database() AND state <> 'idle'").fetchall()
        return f"store head {head}, read models {dict(read_models)}, sessions {busy}"
    except Exception as exc:  # noqa: BLE001 - a diagnosis, not a check
        return f"positions unknown ({exc})"


@dataclass
class Scenario:
    """A service under load with a webhook receiver: faults are injected one at a time, each measured."""

    service: Service
    receiver: Receiver
    tenant: Tenant
    load: Load
    probe_conversation: str
    probe_reader: dict[str, str]
    subscription: str

    @classmethod
    def start(cls, data_dir: Path, receiver: Receiver, clients: int = 4, rate: float | None = None) -> "Scenario":
        service = Service(data_dir).start()
        tenant = make_tenant(service)
        with httpx.Client(base_url=service.base_url, timeout=30) as client:
            subscription = client.post("/api/webhooksubscriptions", headers=tenant.operator, json={
                "websiteId": str(tenant.website_id), "url": receiver.url, "events": ["message.created"]}).json()
            customer = client.post("/api/customers", headers=tenant.operator,
                                   json={"websiteId": str(tenant.website_id)}).json()["_id"]
            conversation = client.post("/api/conversations", headers=tenant.operator, json={
                "websiteId": str(tenant.website_id), "customerId": customer}).json()["_id"]
        load = Load(service.base_url, tenant, clients, rate).start()
        return cls(service, receiver, tenant, load, conversation, tenant.key("messages:read"), subscription["_id"])

    def inject(self, fault: str, recover_within: float = 120.0) -> dict:
        """Injects the fault and waits for recovery; what happened, in seconds and counts."""
        at = time.monotonic()
        print(f"injecting: kill -9 of {fault}", flush=True)
        FAULTS[fault](self.service)
        recovered = probe(self.service, self.tenant, self.probe_conversation, self.probe_reader,
                          at + recover_within)
        failed = [a for a in self.load.between(at, recovered) if a.status != 200]
        return {"fault": fault, "at": at, "recovered": recovered, "recover_seconds": recovered - at,
                "detect_seconds": (min(a.at + a.seconds for a in failed) - at) if failed else None,
                "answers_503": sum(a.status == 503 for a in failed),
                "answers_other_errors": sum(a.status not in (0, 503) for a in failed),
                "no_answer": sum(a.status == 0 for a in failed)}

    def writes_per_second(self, start: float, end: float) -> float:
        writes = [a for a in self.load.between(start, end) if a.status == 200 and a.kind != "read"]
        return len(writes) / max(end - start, 1e-9)


def stored_messages(database_url: str) -> dict[str, int]:
    """Each message id in the event store, with the number of times its creation is recorded."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT originator_id::text, count(*) FROM parley_events "
                            "WHERE topic = 'MessageCreated' GROUP BY 1").fetchall()
    return dict(rows)


def due_deliveries(database_url: str, subscription: str) -> dict[str, str]:
    """Every delivery the webhooks projection recorded as due for the subscription, with its status."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT id::text, status FROM webhook_deliveries WHERE subscription_id = %s",
                            (subscription,)).fetchall()
    return dict(rows)


def rebuild(service: Service, name: str) -> None:
    result = subprocess.run([sys.executable, "-m", "parley.cli", "projections", "rebuild", name,
                             "--data-dir", str(service.data_dir)], env=service.env, capture_output=True,
                            text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
