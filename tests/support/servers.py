"""Real PostgreSQL and real NATS, and a real `parley serve` process talking HTTP; tenants to test with.

Where the servers come from, in order: `PARLEY_DATABASE_URL` and `PARLEY_NATS_URL` when both are set;
testcontainers when `PARLEY_TEST_CONTAINERS=1` (failing with a clear message when no Docker daemon
answers); otherwise the embedded wheels, started once per test session.
"""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx
import psutil
import psycopg
import pytest

from commands import admin
from events.sealing import Sealer
from events.store import EventStore
from parley.runtime import secrets_sealer
from parley.settings import Settings

ALL_KEY_SCOPES = "conversations:read,customers:read,customers:write,documents:read,messages:read,messages:write,websites:read"


@dataclass
class Infra:
    database_url: str  # a maintenance database on the server; tests make their own databases
    nats_url: str

    def new_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url.rsplit("/", 1)[0] + f"/{name}"


def from_containers() -> Iterator[Infra]:
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable daemon
        pytest.fail(f"PARLEY_TEST_CONTAINERS=1 but no Docker daemon answers ({exc})")
    from testcontainers.core.container import DockerContainer
    from testcontainers.postgres import PostgresContainer

    with PostgresContainer("postgres:16") as pg, DockerContainer("nats:2").with_command("-js").with_exposed_ports(4222) as nats_container:
        url = pg.get_connection_url().replace("postgresql+psycopg2", "postgresql")
        nats_url = f"nats://{nats_container.get_container_host_ip()}:{nats_container.get_exposed_port(4222)}"
        yield Infra(url, nats_url)


@dataclass
class Server:
    """A `parley serve` child process with its own database and stream on the shared servers."""

    database_url: str
    nats_url: str
    env: dict[str, str]
    data_dir: Path
    proc: subprocess.Popen | None = None
    base_url: str = ""
    output: list[str] = field(default_factory=list)

    def start(self, *args: str, timeout: float = 60) -> "Server":
        self.output = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "parley.cli", "serve", "--port", "0", "--data-dir", str(self.data_dir), *args],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ready = threading.Event()

        def pump() -> None:
            for line in self.proc.stdout:
                self.output.append(line)
                if " listening on " in line:
                    self.base_url = line.rsplit(" ", 1)[1].strip()
                    ready.set()
                elif "workers running" in line:
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout):
            self.stop()
            raise RuntimeError("parley serve did not start:\n" + "".join(self.output))
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """SIGKILL to the server and its workers process at once, as when the machine loses power."""
        if self.proc:
            for process in self.children():
                try:
                    process.kill()
                except psutil.NoSuchProcess:
                    pass
            self.proc.kill()
            self.proc.wait()

    def children(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.proc.pid).children(recursive=True) if self.proc else []
        except psutil.NoSuchProcess:
            return []

    def workers_processes(self) -> list[psutil.Process]:
        """The live workers processes that `role all` started (multiprocessing's spawned children)."""
        found = []
        for process in self.children():
            try:
                if process.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(process.cmdline()):
                    found.append(process)
            except psutil.Error:  # gone meanwhile
                pass
        return found

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=30, **kwargs)

    def store(self) -> EventStore:
        return EventStore(self.database_url, pool_size=1)

    @property
    def sealer(self) -> Sealer:
        """The server's: what commands run here seal its secrets with."""
        return secrets_sealer(Settings(data_dir=self.data_dir, secrets_key=self.env.get("PARLEY_SECRETS_KEY", "")))

    def wait_projected(self, position: int, name: str = "core", timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute("SELECT position FROM parley_projection_positions WHERE name = %s",
                                   (name,)).fetchone()
                if row and row[0] >= position:
                    return
                time.sleep(0.01)
        raise AssertionError(f"projection {name} did not reach {position}")


def server_env(infra: Infra, database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    # Every test client is 127.0.0.1, one anonymous rate-limit bucket for the whole suite: lift its limit
    # unless a test sets its own; likewise the per-account sign-in backoff, which wrong-password tests reach.
    # Servers on one database but different data directories share a key, as a deployment's processes must.
    env.update(PARLEY_DATABASE_URL=database_url, PARLEY_NATS_URL=infra.nats_url,
               PARLEY_SECRETS_KEY=secrets.token_urlsafe(32),
               PARLEY_NATS_STREAM=f"T{uuid.uuid4().hex[:10].upper()}", PARLEY_LOG_LEVEL="WARNING",
               PARLEY_RATE_ANONYMOUS_PER_MINUTE="100000", PARLEY_RATE_SIGNIN_PER_MINUTE="100000",
               PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="100000", PARLEY_SIGNIN_FAILURES_PER_ACCOUNT="100000")
    env.update(extra)
    return env


def make_server(infra: Infra, tmp_path: Path, **extra_env: str) -> Server:
    database_url = infra.new_database()
    return Server(database_url, infra.nats_url, server_env(infra, database_url, **extra_env), tmp_path)


def basic(secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(secret.encode()).decode()}


def token(value: str) -> dict[str, str]:
    return {"Authorization": f"Token {value}"}


@dataclass(frozen=True)
class Colleague:
    """An operator added to a tenant's organization: its id, e-mail address and token's headers."""

    id: uuid.UUID
    email: str
    headers: dict[str, str]


@dataclass
class Tenant:
    """An organization with one website, one operator and helpers to mint API keys."""

    server: Server
    org_id: uuid.UUID
    website_id: uuid.UUID
    website_name: str
    identity_secret: str
    operator_token: str
    operator_email: str

    @property
    def operator(self) -> dict[str, str]:
        return token(self.operator_token)

    def key(self, scopes: str = ALL_KEY_SCOPES, website: uuid.UUID | None = None, rate: int | None = None) -> dict[str, str]:
        return self.new_key(scopes, website, rate)[1]

    def new_key(self, scopes: str = ALL_KEY_SCOPES, website: uuid.UUID | None = None,
                rate: int | None = None) -> tuple[uuid.UUID, dict[str, str]]:
        """A new API key's id, and the headers that present it."""
        store = self.server.store()
        try:
            created, secret = admin.create_api_key(store, self.org_id, scopes.split(","), website, rate)
        finally:
            store.close()
        self.server.wait_projected(created.position)
        return created.id, basic(secret)

    def add_operator(self, role: str) -> Colleague:
        """Another operator of the organization, with `role`."""
        email = f"{role}-{uuid.uuid4().hex[:8]}@example.com"
        store = self.server.store()
        try:
            created, secret = admin.create_operator(store, self.org_id, email, "correct horse", role)
        finally:
            store.close()
        self.server.wait_projected(created.position)
        return Colleague(created.id, email, token(secret))

    def add_website(self, name: str | None = None) -> tuple[uuid.UUID, str]:
        store = self.server.store()
        try:
            created, secret = admin.create_website(store, self.server.sealer, self.org_id,
                                                   name or f"w-{uuid.uuid4().hex[:10]}", None)
        finally:
            store.close()
        self.server.wait_projected(created.position)
        return created.id, secret


def make_tenant(server: Server) -> Tenant:
    store = server.store()
    try:
        org = admin.create_org(store, "Org " + uuid.uuid4().hex[:6])
        name = f"site-{uuid.uuid4().hex[:10]}"
        website, identity_secret = admin.create_website(store, server.sealer, org.id, name, "#123456")
        email = f"op-{uuid.uuid4().hex[:8]}@example.com"
        operator, operator_token = admin.create_operator(store, org.id, email, "correct horse")
    finally:
        store.close()
    server.wait_projected(operator.position)
    return Tenant(server, org.id, website.id, name, identity_secret, operator_token, email)


