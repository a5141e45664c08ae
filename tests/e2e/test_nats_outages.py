"""A NATS outage that lasts (30 s, not a blip): reads, realtime streams and webhooks go on from the event
store while it is down (docs/faults.md), and the live frames (typing) work again once it is back."""

from __future__ import annotations

import time
from typing import Iterator

import pytest

from parley.embedded import EmbeddedNats
from tests.integration.test_webhooks import (HOOK_ENV, create_conversation, create_customer, create_message,
                                             eventually, subscribe)
from tests.support.receivers import Receiver
from tests.support.servers import Server, make_tenant, server_env
from tests.support.visitors import EventStream, visitor_with_conversation

OUTAGE_SECONDS = 30.0
WRITE_EVERY_SECONDS = 3.0
# How long a write may take to reach another credential's read, an operator's stream or a webhook
# receiver while NATS is down: the store is read every 0.1 s, and a busy shared machine adds the rest.
SEEN_WITHIN_SECONDS = 10.0  # still far inside the 30 s outage, when nothing came before the fix
START_TIMEOUT = 180


@pytest.fixture(scope="module")
def own_nats(tmp_path_factory) -> Iterator[EmbeddedNats]:
    """A NATS of this module's own, which its tests stop and start (the session's is shared)."""
    nats_server = EmbeddedNats(tmp_path_factory.mktemp("nats"))
    nats_server.start()
    yield nats_server
    nats_server.stop()


@pytest.fixture(scope="module")
def served(infra, own_nats, tmp_path_factory) -> Iterator[Server]:
    database_url = infra.new_database()
    env = server_env(infra, database_url, PARLEY_NATS_URL=own_nats.url, **HOOK_ENV)
    server = Server(database_url, own_nats.url, env, tmp_path_factory.mktemp("server"))
    server.start(timeout=START_TIMEOUT)
    yield server
    server.stop()


def received_within(receiver: Receiver, needle: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    with receiver.changed:
        while not any(needle.encode() in request.body for request in receiver.requests):
            if (left := deadline - time.monotonic()) <= 0:
                return False
            receiver.changed.wait(left)
    return True


def pushed_within(stream: EventStream, message_id: str, seconds: float) -> bool:
    try:
        stream.until(lambda p: p.event == "message.created" and p.data["_id"] == message_id, timeout=seconds)
    except Exception:  # noqa: BLE001 - queue.Empty: not pushed in time
        return False
    return True


def test_reads_realtime_and_webhooks_go_on_from_the_store_through_a_long_nats_outage(served, own_nats):
    tenant = make_tenant(served)
    reader = tenant.key()  # another credential than the writer's: it waits for the organization's writes
    with served.client() as client, Receiver() as receiver, \
            EventStream(served.base_url, "/api/realtime", tenant.operator) as stream:
        subscribe(client, tenant, receiver.url, events=["message.created"])
        conversation = create_conversation(client, tenant, create_customer(client, tenant))
        before = create_message(client, tenant, conversation, "before")["_id"]
        assert pushed_within(stream, before, SEEN_WITHIN_SECONDS)
        assert received_within(receiver, before, SEEN_WITHIN_SECONDS)

        failures: list[str] = []
        own_nats.stop()
        try:
            stopped = time.monotonic()
            while time.monotonic() - stopped < OUTAGE_SECONDS:
                round_started = time.monotonic()
                written = create_message(client, tenant, conversation, f"at {round_started - stopped:.0f} s")["_id"]
                read = client.get("/api/messages", params={"conversationId": conversation["_id"]}, headers=reader)
                if read.status_code != 200:
                    failures.append(f"read {read.status_code}: {read.text}")
                elif read.json()[-1]["_id"] != written:
                    failures.append("read without the write before it")
                if not pushed_within(stream, written, SEEN_WITHIN_SECONDS):
                    failures.append(f"{written} not pushed to the operator's stream")
                if not received_within(receiver, written, SEEN_WITHIN_SECONDS):
                    failures.append(f"{written} not delivered to the webhook")
                time.sleep(max(0.0, WRITE_EVERY_SECONDS - (time.monotonic() - round_started)))
        finally:
            own_nats.start()
        assert failures == []

        eventually(lambda: client.get("/readyz").json()["status"] == "ready")  # NATS back (200 all along)
        after = create_message(client, tenant, conversation, "after")["_id"]
        assert pushed_within(stream, after, SEEN_WITHIN_SECONDS)
        assert received_within(receiver, after, SEEN_WITHIN_SECONDS)
        listed = client.get("/api/messages", params={"conversationId": conversation["_id"]}, headers=reader).json()
        assert [m["content"] for m in listed][0] == "before" and listed[-1]["_id"] == after
        assert len({m["_id"] for m in listed}) == len(listed)
    assert sorted(r.header("X-Service-Delivery") for r in receiver.requests) == sorted(
        {r.header("X-Service-Delivery") for r in receiver.requests})  # nothing delivered twice


def test_typing_reaches_an_open_visitor_stream_again_after_nats_restarts(served, own_nats):
    tenant = make_tenant(served)
    with served.client() as client:
        visitor, conversation_id = visitor_with_conversation(client, tenant)
        typing = f"/api/conversations/{conversation_id}/typing"
        with EventStream(served.base_url, "/api/chat/realtime", visitor.headers) as stream:
            def typing_arrives() -> bool:
                """Live frames are lost while their connection is down (the previous test's outage may still be
                ending here): typing is sent again until one arrives."""
                assert client.post(typing, headers=tenant.operator, json={"typing": True}).status_code == 204
                try:
                    return stream.next(0.5).event == "typing"
                except Exception:  # noqa: BLE001 - queue.Empty: not yet
                    return False

            eventually(typing_arrives, timeout=15)
            own_nats.stop()
            own_nats.start()
            eventually(typing_arrives, timeout=15)
