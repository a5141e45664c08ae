"""Leadership with a lease and a fence (docs/decisions.md): a frozen leader is replaced within its lease, and
when it wakes it writes nothing, so no read model position moves twice and no webhook goes out twice."""

from __future__ import annotations

import os
import signal
import time

import psycopg

from tests.e2e.test_runtime import dump
from tests.e2e.test_webhooks_recovery import customer_written_behind_the_api, delivered_ids
from tests.integration.test_webhooks import HOOK_ENV, eventually, subscribe
from tests.support.faultkit import due_deliveries, rebuild
from tests.support.receivers import Receiver
from tests.support.servers import Server, make_server, make_tenant

START_TIMEOUT = 180
LEASE = 3
# The roles the workers process leads (the search read model runs in the API process with the embedded index).
WORKER_ROLES = {"relay", "campaign-sender"}


def leases(database_url: str) -> dict[str, tuple[int, int]]:
    """Each role's lease: the holder's process id and the generation (none before a worker made the table)."""
    with psycopg.connect(database_url) as conn:
        try:
            rows = conn.execute("SELECT name, holder, generation FROM parley_leases").fetchall()
        except psycopg.errors.UndefinedTable:
            return {}
    return {name: (int(holder.split(":")[1]), generation) for name, holder, generation in rows}


def workers_roles(database_url: str) -> dict[str, tuple[int, int]]:
    return {name: lease for name, lease in leases(database_url).items()
            if name in WORKER_ROLES or (name.startswith("projections:") and name != "projections:search")}


def held_by(roles: dict[str, tuple[int, int]], pid: int) -> dict[str, tuple[int, int]] | None:
    return roles if {holder for holder, _ in roles.values()} == {pid} else None


def test_a_frozen_leader_is_replaced_within_the_lease_and_writes_nothing_when_it_wakes(infra, tmp_path):
    env = {**HOOK_ENV, "PARLEY_LEADER_LEASE_SECONDS": str(LEASE), "PARLEY_READ_WAIT_SECONDS": "0.5"}
    first = make_server(infra, tmp_path / "first", **env)
    api = Server(first.database_url, first.nats_url, first.env, tmp_path / "api")
    second = Server(first.database_url, first.nats_url, first.env, tmp_path / "second")
    first.start("--role", "workers", timeout=START_TIMEOUT)
    try:
        eventually(lambda: len(roles := workers_roles(first.database_url)) == 3
                   and {pid for pid, _ in roles.values()} == {first.proc.pid})
        second.start("--role", "workers", timeout=START_TIMEOUT)
        api.start("--role", "api", timeout=START_TIMEOUT)
        tenant = make_tenant(api)
        reader = tenant.key()  # another credential than the writer's
        with Receiver() as receiver, api.client() as client:
            subscription = subscribe(client, tenant, receiver.url)["_id"]
            written = [customer_written_behind_the_api(api, tenant) for _ in range(3)]
            receiver.wait_for(3)
            assert {pid for pid, _ in workers_roles(first.database_url).values()} == {first.proc.pid}

            os.kill(first.proc.pid, signal.SIGSTOP)
            stopped_at = time.monotonic()
            try:
                frozen = customer_written_behind_the_api(api, tenant)
                written.append(frozen)
                eventually(lambda: client.get(f"/api/customers/{frozen}", headers=reader).status_code == 200,
                           timeout=LEASE + 30)
                took_over = time.monotonic() - stopped_at
                print(f"a frozen leader replaced in {took_over:.1f} s (lease {LEASE} s)")
                assert took_over < LEASE + 5
                # every role, each on its own lease (polled each second), within the same bound
                roles = eventually(lambda: held_by(workers_roles(first.database_url), second.proc.pid),
                                   timeout=LEASE + 10)
                assert time.monotonic() - stopped_at < LEASE + 5
                assert all(generation >= 2 for _, generation in roles.values())
                written += [customer_written_behind_the_api(api, tenant) for _ in range(3)]
                receiver.wait_for(len(written))
            finally:
                os.kill(first.proc.pid, signal.SIGCONT)

            written += [customer_written_behind_the_api(api, tenant) for _ in range(3)]
            receiver.wait_for(len(written))
            time.sleep(LEASE)  # time for the woken leader to write, were it not fenced
            assert first.proc.poll() is None  # it stepped down and stands by
            assert any("stepping down" in line for line in first.output), "".join(first.output[-40:])
            assert {pid for pid, _ in workers_roles(first.database_url).values()} == {second.proc.pid}

            ids = delivered_ids(receiver)
            assert len(ids) == len(set(ids)) == len(written)
            assert len(due_deliveries(first.database_url, subscription)) == len(written)
            for customer in written:
                assert client.get(f"/api/customers/{customer}", headers=reader).status_code == 200
        store = first.store()
        try:
            head = store.head()
        finally:
            store.close()
        first.wait_projected(head, "core")
        live = dump(first.database_url)
        rebuild(first, "core")
        assert dump(first.database_url) == live
    finally:
        for server in (api, second, first):
            if server.proc and server.proc.poll() is None:
                os.kill(server.proc.pid, signal.SIGCONT)
            server.stop()
