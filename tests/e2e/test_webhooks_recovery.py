"""No due delivery is lost: not when the worker is killed mid-delivery, not when NATS restarts, not
when the whole service stops while deliveries wait for their retry."""

from __future__ import annotations

import threading
import uuid

from tests.support.servers import Server, make_server, make_tenant, server_env
from tests.support.receivers import Answer, Receiver
from tests.integration.test_webhooks import HOOK_ENV, delivery_log, eventually, subscribe

from commands.customers import CustomerCreate, create_customer
from commands.principal import Principal
from parley import embedded
from parley.embedded import EmbeddedNats


def customer_written_behind_the_api(server: Server, tenant) -> uuid.UUID:
    """Appends a customer straight to the event store, as a command would while no API is up."""
    store = server.store()
    try:
        principal = Principal("operator", tenant.org_id, uuid.uuid4())
        return create_customer(store, principal, CustomerCreate(website_id=str(tenant.website_id))).id
    finally:
        store.close()


def delivered_ids(receiver: Receiver) -> list[str]:
    return [r.header("X-Service-Delivery") for r in receiver.requests]


def test_a_worker_killed_mid_delivery_delivers_after_restart(infra, tmp_path):
    server = make_server(infra, tmp_path, **HOOK_ENV).start()
    release = threading.Event()
    try:
        tenant = make_tenant(server)
        with Receiver(lambda n: Answer(200, hold=release) if n == 0 else Answer()) as receiver:
            with server.client() as client:
                sub = subscribe(client, tenant, receiver.url)
                response = client.post("/api/customers", headers=tenant.operator,
                                       json={"websiteId": str(tenant.website_id)})
                assert response.status_code == 200
            [in_flight] = receiver.wait_for(1)
            server.kill()  # kill -9 while the attempt is open
            release.set()
            written_while_dead = customer_written_behind_the_api(server, tenant)
            server.start()
            receiver.wait_for(3)
            ids = delivered_ids(receiver)
            assert ids.count(in_flight.header("X-Service-Delivery")) == 2  # at least once: redelivered
            assert len(set(ids)) == 2
            with server.client() as client:
                def both_succeeded():
                    log = delivery_log(client, tenant, sub["_id"])
                    return len(log) == 2 and all(d["status"] == "succeeded" for d in log)

                eventually(both_succeeded)
            bodies = [r.body for r in receiver.requests]
            assert any(str(written_while_dead).encode() in body for body in bodies)
    finally:
        release.set()
        server.stop()


def test_a_restart_of_nats_loses_no_delivery(infra, tmp_path, monkeypatch):
    nats_server = EmbeddedNats(tmp_path / "nats")
    nats_server.start()
    database_url = infra.new_database()
    env = server_env(infra, database_url, **HOOK_ENV)
    env["PARLEY_NATS_URL"] = nats_server.url
    server = Server(database_url, nats_server.url, env, tmp_path / "server").start()
    try:
        tenant = make_tenant(server)
        with Receiver() as receiver:
            with server.client() as client:
                subscribe(client, tenant, receiver.url)
            customer_written_behind_the_api(server, tenant)
            receiver.wait_for(1)
            port = nats_server.port
            nats_server.stop()
            while_down = customer_written_behind_the_api(server, tenant)
            monkeypatch.setattr(embedded, "free_port", lambda: port)  # the service reconnects to the same address
            nats_server.start()
            [_, second] = receiver.wait_for(2)
            assert str(while_down).encode() in second.body
    finally:
        server.stop()
        nats_server.stop()


def test_a_stopped_service_resumes_pending_retries(infra, tmp_path):
    # Retries a second apart: the 20 failures that disable a subscription must not all fit in a slow stop.
    server = make_server(infra, tmp_path, **{**HOOK_ENV, "PARLEY_WEBHOOK_RETRY_BASE_SECONDS": "0.5",
                                             "PARLEY_WEBHOOK_RETRY_CAP_SECONDS": "1"}).start()
    healthy = threading.Event()
    try:
        tenant = make_tenant(server)
        with Receiver(lambda n: Answer() if healthy.is_set() else Answer(503)) as receiver:
            with server.client() as client:
                sub = subscribe(client, tenant, receiver.url)
            customer_written_behind_the_api(server, tenant)
            receiver.wait_for(2)  # failed and retried: it is waiting for its next attempt
            server.stop()
            failed_attempts = len(receiver.requests)
            healthy.set()
            server.start()
            receiver.wait_for(failed_attempts + 1)
            with server.client() as client:
                [delivery] = eventually(lambda: [d for d in delivery_log(client, tenant, sub["_id"])
                                                 if d["status"] == "succeeded"])
            assert delivery["attempts"][-1]["responseStatus"] == 200
            assert len(set(delivered_ids(receiver))) == 1
    finally:
        server.stop()


def test_several_worker_processes_share_the_work_without_delivering_twice(infra, tmp_path):
    server = make_server(infra, tmp_path / "a", **HOOK_ENV).start()
    second = Server(server.database_url, server.nats_url, dict(server.env), tmp_path / "b")
    try:
        second.start("--role", "workers")
        tenant = make_tenant(server)
        with Receiver() as one, Receiver() as two, Receiver() as three:
            receivers = (one, two, three)
            with server.client() as client:
                for receiver in receivers:
                    subscribe(client, tenant, receiver.url)
                for _ in range(20):
                    customer_written_behind_the_api(server, tenant)
                for receiver in receivers:
                    receiver.wait_for(20)
                marker = client.post("/api/customers", headers=tenant.operator,
                                     json={"websiteId": str(tenant.website_id)})
                for receiver in receivers:
                    receiver.wait_for(21)
            assert marker.status_code == 200
            for receiver in receivers:
                ids = delivered_ids(receiver)
                assert len(ids) == len(set(ids)) == 21
    finally:
        second.stop()
        server.stop()
