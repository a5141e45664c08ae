"""A three-node NATS JetStream cluster (nats-server processes from the wheel) with a three-replica stream:
kill -9 of the node leading the stream, under steady writes, loses nothing and doubles nothing, in the read
models, an operator's realtime stream and the webhooks; and how long realtime stalls is measured (printed)
and bounded."""

from __future__ import annotations

import threading
import time
from typing import Iterator

import pytest

from tests.integration.test_webhooks import (HOOK_ENV, create_conversation, create_customer, create_message,
                                             eventually, subscribe)
from tests.support.nats_cluster import NatsCluster
from tests.support.receivers import Receiver
from tests.support.servers import Server, make_tenant, server_env
from tests.support.visitors import EventStream

WRITE_EVERY_SECONDS = 0.2
WRITING_SECONDS = 20.0
KILL_AFTER_SECONDS = 5.0
# A write reaches the operator's stream within this, through the node's death: nats-py reconnects to
# another node, and a consumer whose stream falls silent while the store has more reads the store after
# events/stream.py STALL_SECONDS (2 s).
STALL_BOUND_SECONDS = 15.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[NatsCluster]:
    nodes = NatsCluster(tmp_path_factory.mktemp("cluster")).start()
    yield nodes
    nodes.stop()


@pytest.fixture(scope="module")
def served(infra, cluster, tmp_path_factory) -> Iterator[Server]:
    database_url = infra.new_database()
    env = server_env(infra, database_url, PARLEY_NATS_URL=cluster.url, PARLEY_NATS_REPLICAS="3", **HOOK_ENV)
    server = Server(database_url, cluster.url, env, tmp_path_factory.mktemp("server"))
    server.start(timeout=180)
    yield server
    server.stop()


def test_killing_the_stream_leader_under_writes_loses_and_doubles_nothing(served, cluster):
    tenant = make_tenant(served)
    arrivals: dict[str, list[float]] = {}
    accepted: dict[str, float] = {}
    with served.client() as client, Receiver() as receiver, \
            EventStream(served.base_url, "/api/realtime", tenant.operator) as stream:
        subscribe(client, tenant, receiver.url, events=["message.created"])
        conversation = create_conversation(client, tenant, create_customer(client, tenant))
        first = create_message(client, tenant, conversation, "first")["_id"]
        stream.until(lambda p: p.event == "message.created" and p.data["_id"] == first)
        leader, replicas = cluster.stream_leader(served.env["PARLEY_NATS_STREAM"])
        assert replicas == 3

        def listen() -> None:
            while True:
                try:
                    pushed = stream.next(STALL_BOUND_SECONDS * 2)
                except Exception:  # noqa: BLE001 - queue.Empty: the writes are over
                    return
                if pushed.event == "message.created":
                    arrivals.setdefault(pushed.data["_id"], []).append(time.monotonic())

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        started, killed = time.monotonic(), False
        while time.monotonic() - started < WRITING_SECONDS:
            if not killed and time.monotonic() - started > KILL_AFTER_SECONDS:
                cluster.kill(leader)
                killed = True
            message_id = create_message(client, tenant, conversation, f"{time.monotonic() - started:.1f}")["_id"]
            accepted[message_id] = time.monotonic()
            time.sleep(WRITE_EVERY_SECONDS)
        listener.join(STALL_BOUND_SECONDS * 3)

        listed = client.get("/api/messages", params={"conversationId": conversation["_id"], "limit": 500},
                            headers=tenant.key()).json()
        assert {m["_id"] for m in listed} >= set(accepted) and len({m["_id"] for m in listed}) == len(listed)
        assert set(accepted) <= set(arrivals), "a write never reached the operator's stream"
        assert all(len(arrivals[m]) == 1 for m in accepted), "a write was pushed twice"
        stall = max(arrivals[m][0] - accepted[m] for m in accepted)
        print(f"\nrealtime stall through the stream leader's kill: {stall:.2f} s (bound {STALL_BOUND_SECONDS} s)")
        assert stall < STALL_BOUND_SECONDS
        eventually(lambda: sum(m.encode() in r.body for m in accepted for r in receiver.requests) >= len(accepted),
                   timeout=60)
    deliveries = [r.header("X-Service-Delivery") for r in receiver.requests]
    assert len(deliveries) == len(set(deliveries))  # nothing delivered twice
    cluster.start(leader)
