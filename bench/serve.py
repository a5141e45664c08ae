"""`parley serve` as the HTTP benchmarks start it: on a free port, from this checkout."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from parley.embedded import EmbeddedNats, EmbeddedPostgres  # noqa: E402


def start_serve(data_dir: Path, env: dict[str, str], role: str = "all") -> tuple[subprocess.Popen, str]:
    """Starts `parley serve` (in `role`: api, workers or all) and returns it with its base URL once it
    listens (workers: "" once they run). Its output is read on in the background: a full pipe would block
    the server."""
    proc = subprocess.Popen([sys.executable, "-m", "parley.cli", "serve", "--port", "0", "--data-dir", str(data_dir),
                             "--role", role], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT)
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:
        if " listening on " in line or line.startswith("Parley workers running"):
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, line.rsplit(" ", 1)[1].strip() if " listening on " in line else ""
        said.append(line)
    raise RuntimeError(f"parley serve exited with {proc.wait()} before it listened: {''.join(said[-5:])}")


@dataclass
class Served:
    base_url: str
    database_url: str  # the benchmark's own database
    server: subprocess.Popen
    embedded: list = field(default_factory=list)  # the PostgreSQL and NATS started here (none when external)
    data_dir: Path | None = None  # the server's


def fresh_database(tmp: Path) -> tuple[str, str, str, list]:
    """A database of the benchmark's own (its URL, the NATS URL, its name, for a stream of the same name): on
    PARLEY_DATABASE_URL and PARLEY_NATS_URL when both are set, else on an embedded PostgreSQL and NATS started
    under `tmp` (returned, for the caller to stop)."""
    embedded = []
    database_url, nats_url = os.environ.get("PARLEY_DATABASE_URL"), os.environ.get("PARLEY_NATS_URL")
    if not (database_url and nats_url):
        embedded = [EmbeddedPostgres(tmp / "postgres"), EmbeddedNats(tmp / "nats")]
        for server in embedded:
            server.start()
        database_url, nats_url = embedded[0].url, embedded[1].url
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_url.rsplit("/", 1)[0] + "/" + name, nats_url, name, embedded


@contextlib.contextmanager
def serve_on_fresh_database(settings: dict[str, str]) -> Iterator[Served]:
    """`parley serve` on a database of its own: on PARLEY_DATABASE_URL and PARLEY_NATS_URL when both are
    set, else on an embedded PostgreSQL and NATS started (and stopped) here. `settings` are PARLEY_*
    variables added to the server's environment."""
    tmp = Path(tempfile.mkdtemp(prefix="parley-bench-"))
    database_url, nats_url, name, embedded = fresh_database(tmp)
    env = {**os.environ, "PARLEY_DATABASE_URL": database_url, "PARLEY_NATS_URL": nats_url,
           "PARLEY_NATS_STREAM": name.upper(), "PARLEY_LOG_LEVEL": "WARNING", **settings}
    server, base_url = start_serve(tmp, env)
    try:
        yield Served(base_url, database_url, server, embedded, tmp)
    finally:
        server.terminate()
        server.wait(30)
        for started in reversed(embedded):
            started.stop()


def wait_projected(database_url: str, position: int, names: tuple[str, ...] = ("core", "chat")) -> None:
    """Waits until the named read models (by default credentials, conversations, messages) reach `position`,
    so that what a benchmark measures next is not the service catching up with what it seeded."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        while (conn.execute("SELECT min(position) FROM parley_projection_positions WHERE name = ANY(%s)",
                            (list(names),)).fetchone()[0] or 0) < position:
            time.sleep(0.1)


def settled(base_url: str, pid: int) -> None:
    """Waits until the server has loaded its search model (in the API process `pid`, after it listens: its
    hundreds of MB are not what a benchmark measures) and the process's memory holds still (within 1 MiB
    over 2 s). Needs psutil (the test extra)."""
    import psutil

    while httpx.get(f"{base_url}/readyz", timeout=30).json()["search"]["model"] != "ready":
        time.sleep(0.5)
    process, last = psutil.Process(pid), 0
    while abs(process.memory_info().rss - last) > 2**20:
        last = process.memory_info().rss
        time.sleep(2)
