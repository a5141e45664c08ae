"""Faults answered as they should be: health endpoints, 503 with Retry-After while PostgreSQL is out of
reach (never a hang or a bare 500), 503 rather than stale data when the read models are behind, and
external PostgreSQL and NATS restarts survived with nothing lost. The kill -9 suite is
test_fault_injection.py."""

from __future__ import annotations

import time

import httpx
import pytest

from events.stream import Tail
from parley.embedded import EmbeddedNats, EmbeddedPostgres
from tests.support.servers import Server, make_server, make_tenant, server_env
from tests.integration.test_resources import create_conversation, create_customer, post_message
from tests.integration.test_webhooks import eventually

DATABASE_WAIT = 1.0
# What a request may take beyond PARLEY_DATABASE_WAIT_SECONDS on a busy shared machine: a request slower
# than this is a hang, not a slow answer.
SLACK = 4.0
START_TIMEOUT = 180  # a start on the shared CI machine at its busiest took over 60 s


def test_healthz_and_readyz(http, server):
    alive = http.get("/healthz")
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    ready = http.get("/readyz")
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "ready" and body["postgres"] == {"reachable": True} and body["nats"] == {"reachable": True}
    assert {"core", "chat", "webhooks"} <= set(body["readModels"])
    assert all(0 <= model["lag"] <= body["head"] for model in body["readModels"].values())


def timed(client: httpx.Client, method: str, path: str, **kwargs) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = client.request(method, path, **kwargs)
    return response, time.monotonic() - started


def assert_unavailable(response: httpx.Response, elapsed: float) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["status"] == 503
    assert elapsed < DATABASE_WAIT + SLACK, f"answered after {elapsed:.1f} s"


@pytest.fixture
def external(tmp_path):
    """PostgreSQL and NATS from the wheels, run by the test as if they were external servers. Durable: a
    server without fsync and synchronous commit loses its latest commits when it is killed."""
    postgres, nats_server = EmbeddedPostgres(tmp_path / "pg", durable=True), EmbeddedNats(tmp_path / "nats")
    postgres.start()
    nats_server.start()
    yield postgres, nats_server
    nats_server.stop()
    postgres.stop()


def test_external_postgres_and_nats_restarts_are_survived(external, tmp_path):
    postgres, nats_server = external
    from tests.support.servers import Infra

    infra = Infra(postgres.url.rsplit("/", 1)[0] + "/postgres", nats_server.url)
    server = make_server(infra, tmp_path, PARLEY_DATABASE_WAIT_SECONDS=str(DATABASE_WAIT))
    server.start(timeout=START_TIMEOUT)
    try:
        tenant = make_tenant(server)
        with server.client() as client:
            conversation = create_conversation(client, tenant, create_customer(client, tenant)["_id"])["_id"]
            before = post_message(client, tenant, conversation, "before")["_id"]

            postgres.proc.kill()  # the database server goes away under the service
            postgres.proc.wait()
            for method, path, body in (("GET", "/api/websites", None), ("GET", f"/api/conversations/{conversation}", None),
                                       ("POST", "/api/messages", {"conversationId": conversation, "content": "x",
                                                                  "from": "customer"})):
                assert_unavailable(*timed(client, method, path, json=body, headers=tenant.operator))
            not_ready = client.get("/readyz")
            assert not_ready.status_code == 503 and not not_ready.json()["postgres"]["reachable"]

            postgres.start()  # back on the same address
            eventually(lambda: client.get("/api/websites", headers=tenant.operator).status_code == 200)
            assert client.get("/readyz").status_code == 200

            nats_server.stop()  # NATS restarts: while it is down the read models follow the store
            while_down = post_message(client, tenant, conversation, "while NATS is down")["_id"]
            listed = client.get("/api/messages", params={"conversationId": conversation}, headers=tenant.operator)
            assert listed.status_code == 200 and [m["_id"] for m in listed.json()][-1] == while_down
            degraded = client.get("/readyz")  # NATS is not on the critical path: ready, and says what degrades
            assert degraded.status_code == 200 and degraded.json()["status"] == "degraded", degraded.text
            assert degraded.json()["degraded"] == ["nats"] and not degraded.json()["nats"]["reachable"]
            nats_server.start()
            eventually(lambda: client.get("/readyz").json()["status"] == "ready")
            after = post_message(client, tenant, conversation, "after")["_id"]
            listed = client.get("/api/messages", params={"conversationId": conversation}, headers=tenant.operator)
            assert [m["_id"] for m in listed.json()] == [before, while_down, after]
    except BaseException:
        print("".join(server.output[-80:]))
        raise
    finally:
        server.stop()


def test_a_read_the_read_models_cannot_catch_up_with_answers_503_not_old_data(infra, tmp_path):
    workers = make_server(infra, tmp_path, PARLEY_READ_WAIT_SECONDS="0.5")
    api = Server(workers.database_url, workers.nats_url, workers.env, tmp_path)
    workers.start("--role", "workers", timeout=START_TIMEOUT)
    api.start("--role", "api", timeout=START_TIMEOUT)
    try:
        writer, bystander = make_tenant(workers), make_tenant(workers)
        with api.client() as client:
            conversation = create_conversation(client, writer, create_customer(client, writer)["_id"])["_id"]
            workers.stop()  # nothing moves the read models any more
            posted = client.post("/api/messages", headers=writer.operator,
                                 json={"conversationId": conversation, "content": "unseen", "from": "operator"})
            assert posted.status_code == 200, posted.text  # the write itself needs no read model

            stale = client.get("/api/messages", params={"conversationId": conversation}, headers=writer.operator)
            assert stale.status_code == 503 and "behind" in stale.json()["detail"]
            assert int(stale.headers["retry-after"]) >= 1
            created = client.post("/api/customers", headers=writer.operator, json={"websiteId": str(writer.website_id)})
            assert created.status_code == 503 and "do not repeat" in created.json()["detail"]
            assert int(created.headers["parley-position"]) > int(posted.headers["parley-position"])
            # an organization that wrote nothing since is served as usual
            assert client.get("/api/websites", headers=bystander.operator).status_code == 200

            workers.start("--role", "workers", timeout=START_TIMEOUT)
            listed = eventually(lambda: (r := client.get("/api/messages", params={"conversationId": conversation},
                                                         headers=writer.operator)).status_code == 200 and r)
            assert [m["content"] for m in listed.json()] == ["unseen"]
    finally:
        api.stop()
        workers.stop()


def test_the_tail_reads_the_store_while_nats_is_down_and_the_stream_once_back(infra, tmp_path):
    """The helper every worker follows the log with (docs/faults.md): nothing lost or doubled across a
    NATS outage, and back on the stream afterwards."""
    import asyncio
    from contextlib import aclosing

    from events.store import EventStore
    from events.stream import Relay
    from tests.e2e.test_runtime import append_messages, seed_conversation

    nats_server = EmbeddedNats(tmp_path / "nats")
    nats_server.start()
    database_url = infra.new_database()
    server = Server(database_url, nats_server.url, server_env(infra, database_url), tmp_path)
    org, website, conversation = seed_conversation(server)
    store = EventStore(database_url, pool_size=2)

    start = store.head()

    def append(count: int) -> None:
        append_messages(server, org, website, conversation, count)

    async def follow() -> tuple[list[int], list[bool]]:
        relay = asyncio.create_task(Relay(database_url, nats_server.url, "TAILTEST").run())
        tail = Tail(store, nats_server.url, "TAILTEST", name="test tail")
        seen, modes = [], []
        try:
            await asyncio.to_thread(append, 2)
            async with aclosing(tail.batches(start)) as batches:
                async for batch in batches:
                    seen += [recorded.position for recorded in batch]
                    modes.append(tail.from_stream)
                    if len(seen) == 2:
                        await asyncio.to_thread(nats_server.stop)
                        await asyncio.to_thread(append, 5)
                    elif len(seen) == 7:
                        await asyncio.to_thread(nats_server.start)
                        await asyncio.to_thread(append, 5)
                    elif len(seen) >= 12:
                        if tail.from_stream:
                            return seen, modes
                        await asyncio.to_thread(append, 1)  # until one comes by the stream
        finally:
            relay.cancel()

    try:
        seen, modes = asyncio.run(asyncio.wait_for(follow(), 120))
    finally:
        store.close()
        nats_server.stop()
    assert seen == list(range(start + 1, start + len(seen) + 1))  # every event once, in order, either way
    assert False in modes and modes[-1] is True  # read from the store meanwhile, then the stream again
