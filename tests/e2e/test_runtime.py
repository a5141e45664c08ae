"""Running Parley: the embedded default across restarts, separate roles, the admin CLI, projections
killed mid-stream and rebuilt, read-your-writes, and the production compose file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import signal
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import psycopg
import pytest
import yaml

from commands import admin
from commands.streams import now
from events import types as ev
from events.store import Pending
from events.ids import new_id
from parley.settings import ENVIRONMENT, load_settings
from projections.core import TABLES
from tests.support.servers import Server, basic, make_server, make_tenant, token

ROOT = Path(__file__).resolve().parents[2]


def parley(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "parley.cli", *args], env=env, capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def dump(database_url: str) -> dict[str, list]:
    with psycopg.connect(database_url) as conn:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in TABLES}


def seed_conversation(server: Server):
    store = server.store()
    try:
        org = admin.create_org(store, "Seed")
        website, _ = admin.create_website(store, server.sealer, org.id, f"seed-{new_id().hex[:8]}", None)
        customer_id, conversation_id = new_id(), new_id()
        store.append(Pending(customer_id, 1, ev.CustomerCreated(org_id=org.id, at=now(), customer_id=customer_id,
                                                                website_id=website.id)))
        store.append(Pending(conversation_id, 1, ev.ConversationCreated(
            org_id=org.id, at=now(), conversation_id=conversation_id, website_id=website.id,
            customer_id=customer_id)))
    finally:
        store.close()
    return org.id, website.id, conversation_id


def append_messages(server: Server, org_id, website_id, conversation_id, count: int) -> int:
    store = server.store()
    position = 0
    try:
        for i in range(count):
            message_id = new_id()
            position = store.append(Pending(message_id, 1, ev.MessageCreated(
                org_id=org_id, at=now(), message_id=message_id, conversation_id=conversation_id,
                website_id=website_id, content=f"message {i}", sender="customer")))
    finally:
        store.close()
    return position


def projected(server: Server) -> int:
    with psycopg.connect(server.database_url) as conn:
        try:
            row = conn.execute("SELECT position FROM parley_projection_positions WHERE name = 'core'").fetchone()
        except psycopg.errors.UndefinedTable:  # the workers have not created it yet
            return 0
    return row[0] if row else 0


def test_projection_killed_mid_stream_resumes_exactly_once_and_equals_a_rebuild(infra, tmp_path):
    workers = make_server(infra, tmp_path)
    org_id, website_id, conversation_id = seed_conversation(workers)
    workers.start("--role", "workers")
    writer = threading.Thread(target=append_messages, args=(workers, org_id, website_id, conversation_id, 1500))
    writer.start()
    while projected(workers) < 400:
        pass
    workers.kill()  # SIGKILL: mid-batch, mid-stream
    killed_at = projected(workers)
    writer.join()
    head = workers.store().head()
    assert killed_at < head
    workers.start("--role", "workers")
    workers.wait_projected(head, timeout=60)
    workers.stop()

    live = dump(workers.database_url)
    assert len(live["rm_messages"]) == 1500
    assert sorted(int(m[4].split()[1]) for m in live["rm_messages"]) == list(range(1500))
    parley("projections", "rebuild", "core", env=workers.env)
    assert dump(workers.database_url) == live
    assert projected(workers) == head


def test_rebuild_of_the_running_servers_read_model_equals_the_live_one(server, http, tenant):
    from tests.integration.test_resources import create_conversation, create_customer, post_message

    conversation = create_conversation(http, tenant, create_customer(http, tenant)["_id"])
    post_message(http, tenant, conversation["_id"], "before rebuild")
    store = server.store()
    server.wait_projected(store.head())
    store.close()
    live = dump(server.database_url)
    result = parley("projections", "rebuild", env=server.env)
    assert json.loads(result.stdout)["rebuilt"]["core"] >= 1
    assert dump(server.database_url) == live
    after = post_message(http, tenant, conversation["_id"], "after rebuild")
    listed = http.get("/api/messages", params={"conversationId": conversation["_id"]}, headers=tenant.operator).json()
    assert [m["_id"] for m in listed][-1] == after["_id"] and len(listed) == 2


def test_unknown_projection_name_is_refused(server):
    result = parley("projections", "rebuild", "nonsense", env=server.env, check=False)
    assert result.returncode != 0 and "unknown projection" in result.stderr


def test_read_your_writes_across_credentials(http, tenant):
    from tests.integration.test_resources import create_conversation, create_customer

    reader = tenant.key("messages:read,conversations:read")
    conversation = create_conversation(http, tenant, create_customer(http, tenant)["_id"])
    positions = []
    for i in range(25):
        written = http.post("/api/messages", json={"conversationId": conversation["_id"], "content": f"m{i}",
                                                   "from": "operator"}, headers=tenant.operator)
        positions.append(int(written.headers["Parley-Position"]))
        seen = http.get(f"/api/messages/{written.json()['_id']}", headers=reader)
        assert seen.status_code == 200
        listed = http.get("/api/messages", params={"conversationId": conversation["_id"]}, headers=reader).json()
        assert len(listed) == i + 1
    assert positions == sorted(positions) and len(set(positions)) == 25


def test_api_and_workers_as_separate_processes(infra, tmp_path):
    workers = make_server(infra, tmp_path)
    api = Server(workers.database_url, workers.nats_url, workers.env, tmp_path)
    workers.start("--role", "workers")
    api.start("--role", "api")
    try:
        store = workers.store()
        org = admin.create_org(store, "Split")
        website, _ = admin.create_website(store, workers.sealer, org.id, f"split-{new_id().hex[:8]}", None)
        operator, operator_token = admin.create_operator(store, org.id, f"s-{new_id().hex[:8]}@example.com",
                                                         "long enough")
        store.close()
        workers.wait_projected(operator.position)
        with api.client() as client:
            customer = client.post("/api/customers", json={"websiteId": str(website.id)},
                                   headers=token(operator_token))
            assert customer.status_code == 200, customer.text
            assert client.get(f"/api/customers/{customer.json()['_id']}",
                              headers=token(operator_token)).status_code == 200
    finally:
        api.stop()
        workers.stop()


def wait_until(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)
    return result


def gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_role_all_runs_its_workers_in_a_supervised_child_process(infra, tmp_path):
    server = make_server(infra, tmp_path).start()
    try:
        tenant = make_tenant(server)
        [first] = server.workers_processes()
        first.kill()  # the workers die alone: the server starts new ones
        [second] = wait_until(lambda: [p for p in server.workers_processes() if p.pid != first.pid])
        with server.client() as client:
            # stored either way; a 503 says the read models (the new workers, still starting on a busy
            # machine) do not show it yet, and gives its position
            customer = client.post("/api/customers", headers=tenant.operator, json={"websiteId": str(tenant.website_id)})
            assert customer.status_code in (200, 503), customer.text
            server.wait_projected(int(customer.headers["Parley-Position"]), timeout=60)  # by the new workers
            listed = client.get("/api/customers", headers=tenant.operator).json()
            assert len(listed) == 1
        os.kill(server.proc.pid, signal.SIGKILL)  # the server dies alone: its workers must not outlive it
        server.proc.wait()
        wait_until(lambda: gone(second), timeout=10)
    finally:
        server.kill()


def test_one_process_when_workers_process_is_off(infra, tmp_path):
    server = make_server(infra, tmp_path, PARLEY_WORKERS_PROCESS="0").start()
    try:
        assert server.workers_processes() == []
        tenant = make_tenant(server)
        with server.client() as client:
            customer = client.post("/api/customers", headers=tenant.operator, json={"websiteId": str(tenant.website_id)})
            assert client.get(f"/api/customers/{customer.json()['_id']}", headers=tenant.operator).status_code == 200
    finally:
        server.stop()


def embedded_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env.update(PARLEY_EMBEDDED_FSYNC="0", PARLEY_LOG_LEVEL="WARNING")
    return env


def test_embedded_default_keeps_data_across_restarts_and_admin_cli(tmp_path):
    data_dir = tmp_path / "parley-data"
    env = embedded_env(data_dir)
    served = Server("", "", env, data_dir).start()
    try:
        info = json.loads((data_dir / "server.json").read_text())
        assert info["database_url"].startswith("postgresql://") and info["base_url"] == served.base_url

        org = json.loads(parley("admin", "org", "create", "--name", "Acme", "--data-dir", str(data_dir), env=env).stdout)
        website = json.loads(parley("admin", "website", "create", "--org", org["id"], "--name", "acme-help",
                                    "--brand-color", "#ff8800", "--data-dir", str(data_dir), env=env).stdout)
        assert website["websiteName"] == "acme-help" and len(website["identitySecret"]) >= 32
        operator = json.loads(parley("admin", "operator", "create", "--org", org["id"], "--email", "boss@acme.io",
                                     "--password", "hunter2hunter2", "--data-dir", str(data_dir), env=env).stdout)
        key = json.loads(parley("admin", "apikey", "create", "--org", org["id"], "--scopes", "websites:read",
                                "--website", website["id"], "--data-dir", str(data_dir), env=env).stdout)
        with served.client() as client:
            assert client.get("/api/websites", headers=basic(key["secret"])).status_code == 200
            created = client.post("/api/customers", json={"websiteId": website["id"], "nickname": "kept"},
                                  headers=token(operator["token"])).json()
        revoked = json.loads(parley("admin", "apikey", "revoke", "--id", key["id"], "--data-dir", str(data_dir),
                                    env=env).stdout)
        assert revoked == {"id": key["id"], "revoked": True}
        with served.client() as client:
            assert client.get("/api/websites", headers=basic(key["secret"])).status_code == 401

        bad = parley("admin", "website", "create", "--org", org["id"], "--name", "acme-help",
                     "--data-dir", str(data_dir), env=env, check=False)
        assert bad.returncode != 0 and "taken" in bad.stderr
        bad_scope = parley("admin", "apikey", "create", "--org", org["id"], "--scopes", "root:all",
                           "--data-dir", str(data_dir), env=env, check=False)
        assert bad_scope.returncode != 0 and "scopes" in bad_scope.stderr
    finally:
        served.stop()
    assert served.proc.returncode == 0
    assert not (data_dir / "server.json").exists()
    assert not (data_dir / "nats" / "nats.pid").exists()
    assert not (data_dir / "postgres" / "pgdata" / "postmaster.pid").exists()

    # With no server running, an admin command starts the embedded servers itself, then stops them, and
    # says nothing else, even where XDG_RUNTIME_DIR is unset (the PostgreSQL wheel's import warned there).
    bare = {name: value for name, value in env.items() if name != "XDG_RUNTIME_DIR"}
    offline = parley("admin", "org", "create", "--name", "Offline", "--data-dir", str(data_dir), env=bare)
    assert json.loads(offline.stdout)["id"] and offline.stderr == ""

    served.start()
    try:
        with served.client() as client:
            kept = client.get(f"/api/customers/{created['_id']}", headers=token(operator["token"]))
            assert kept.status_code == 200 and kept.json()["nickname"] == "kept"
    finally:
        served.stop()


def test_compose_file_parses_and_sets_only_known_variables():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "nats-1", "nats-2", "nats-3", "qdrant", "api", "workers"} <= set(services)
    for node in ("nats-1", "nats-2", "nats-3"):
        assert "-js" in " ".join(map(str, services[node].get("command", [])))
    known = set(ENVIRONMENT)
    for name in ("api", "workers"):
        environment = services[name]["environment"]
        variables = environment if isinstance(environment, dict) else dict(v.split("=", 1) for v in environment)
        assert {"PARLEY_DATABASE_URL", "PARLEY_NATS_URL", "PARLEY_QDRANT_URL", "PARLEY_ROLE"} <= set(variables)
        assert set(v for v in variables if v.startswith("PARLEY_")) <= known
    assert "api" in str(services["api"]["environment"]) and "workers" in str(services["workers"]["environment"])


@pytest.mark.parametrize("argv", [["admin", "org", "create"], ["admin", "apikey", "revoke", "--id", "nope"]])
def test_admin_bad_input_exits_non_zero(server, argv):
    result = parley(*argv, env=server.env, check=False)
    assert result.returncode != 0 and result.stderr.strip()


def test_an_operator_e_mail_longer_than_an_address_can_be_is_refused(server, http, tenant):
    """The read models index operator e-mails, and PostgreSQL cannot index one of 3,000 characters: the
    store once took it, and every read model stopped at it."""
    at_most = "a" * (254 - len("@example.com")) + "@example.com"
    for email, accepted in ((at_most, True), ("a" + at_most, False)):
        result = parley("admin", "operator", "create", "--org", str(tenant.org_id), "--email", email,
                        "--password", "correct horse", env=server.env, check=False)
        assert (result.returncode == 0) is accepted, result.stderr
    signed_in = http.post("/api/operators/sessions", json={"email": at_most, "password": "correct horse"})
    assert signed_in.status_code == 200, signed_in.text


def test_an_api_key_rate_beyond_what_the_read_model_holds_is_refused(server, tenant):
    """A rate past 2**31 once went into the store, and every read model stopped at it (integer out of range)."""
    for rate, accepted in (("1000000000", True), ("3000000000", False), ("0", False)):
        result = parley("admin", "apikey", "create", "--org", str(tenant.org_id), "--scopes", "messages:read",
                        "--rate", rate, env=server.env, check=False)
        assert (result.returncode == 0) is accepted, result.stderr
    store = server.store()
    try:
        after = admin.create_org(store, "After")
    finally:
        store.close()
    server.wait_projected(after.position)  # the refused rates stored nothing the read models stop at


def test_every_setting_is_read_from_its_variable(monkeypatch):
    samples = {"data_dir": "/srv/parley", "port": "0", "workers_process": "0", "embedded_fsync": "0",
               "read_wait_seconds": "1.5", "rate_operator_per_minute": "5", "nats_replicas": "3",
               "signin_failures_per_account": "5", "attachment_link_seconds": "600"}
    for variable, (name, _) in ENVIRONMENT.items():
        monkeypatch.setenv(variable, samples.get(name, "7" if name.endswith(("_minute", "_seconds", "_concurrency",
                                                                               "_bytes", "_size", "_attempts"))
                                                 else "x"))
    monkeypatch.setenv("PARLEY_WEBHOOK_ALLOW_PRIVATE", "1")
    settings = load_settings()
    assert settings.data_dir == Path("/srv/parley") and settings.port == 0 and settings.workers_process is False
    assert settings.read_wait_seconds == 1.5 and settings.rate_operator_per_minute == 5
    assert load_settings(data_dir=Path("/elsewhere")).data_dir == Path("/elsewhere")


def test_an_idle_connection_stays_open_past_a_client_pools_expiry(server):
    """httpx and many client pools drop an idle connection after 5 s, uvicorn's own default: with equal
    timeouts the server could close a connection just as a client sends on it, and the request failed with
    "Server disconnected". The server keeps it longer, so the client always lets go first."""
    address = urlsplit(server.base_url)
    request = f"GET /api/websites HTTP/1.1\r\nHost: {address.netloc}\r\n\r\n".encode()
    with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
        conn.sendall(request)
        assert read_response(conn).startswith(b"HTTP/1.1 401 ")
        time.sleep(6)
        conn.sendall(request)
        assert read_response(conn).startswith(b"HTTP/1.1 401 ")


def read_response(conn: socket.socket) -> bytes:
    received = b""
    while b"\r\n\r\n" not in received:
        received += conn.recv(65536) or pytest.fail(f"the server closed the connection: {received!r}")
    head, body = received.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(body) < length:
        body += conn.recv(65536) or pytest.fail("the server closed the connection mid-body")
    return head
