"""The embedded servers trust nobody on the loopback: PostgreSQL asks for the password of its 0600 file,
NATS for its token, and the files that carry them (server.json included) are for this user only."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

import nats
import psycopg
import pytest
from nats.errors import Error as NatsError

from parley.embedded import EmbeddedPostgres
from parley.runtime import Infrastructure, server_file
from parley.settings import load_settings


def without_password(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.username}@{parts.hostname}:{parts.port}").geturl()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    settings = load_settings(data_dir=tmp_path_factory.mktemp("embedded") / "data", embedded_fsync=False)
    infra = Infrastructure(settings).start(reuse_running=False)
    infra.publish("http://127.0.0.1:1")
    yield infra
    infra.stop()


def test_postgres_refuses_a_connection_without_the_password(embedded):
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(without_password(embedded.database_url), connect_timeout=5).close()
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(embedded.database_url.replace(urlsplit(embedded.database_url).password, "guess"),
                        connect_timeout=5).close()
    with psycopg.connect(embedded.database_url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("postgres",)


async def _nats_connects(url: str) -> None:
    connection = await nats.connect(url, allow_reconnect=False, connect_timeout=5, max_reconnect_attempts=0)
    await connection.close()


def test_nats_refuses_a_client_without_the_token(embedded):
    parts = urlsplit(embedded.nats_url)
    assert parts.username  # the token
    with pytest.raises(NatsError, match="[Aa]uthorization"):
        asyncio.run(_nats_connects(f"nats://127.0.0.1:{parts.port}"))
    with pytest.raises(NatsError, match="[Aa]uthorization"):
        asyncio.run(_nats_connects(f"nats://guess@127.0.0.1:{parts.port}"))
    asyncio.run(_nats_connects(embedded.nats_url))


def test_credentials_and_the_data_directory_are_private(embedded):
    data_dir = embedded.settings.data_dir
    published = json.loads(server_file(data_dir).read_text())
    assert published["database_url"] == embedded.database_url and published["nats_url"] == embedded.nats_url
    for private in (server_file(data_dir), data_dir / "postgres" / "password", data_dir / "nats" / "token",
                    data_dir / "nats" / "nats.conf", data_dir / "postgres" / "pgdata" / "pg_hba.conf"):
        assert mode(private) == 0o600, private
    for folder in (data_dir / "postgres", data_dir / "postgres" / "pgdata", data_dir / "nats"):
        assert mode(folder) == 0o700, folder
    # As root, PostgreSQL runs as its own system user, whose group may traverse the data directory
    # (0710) to reach its folder; no one else may even do that.
    assert mode(data_dir) == (0o710 if os.geteuid() == 0 else 0o700)


def test_a_data_directory_that_trusted_the_loopback_is_given_a_password(tmp_path):
    """Data directories made before passwords (initdb --auth=trust, no password file) keep working, and
    stop trusting."""
    postgres = EmbeddedPostgres(tmp_path / "postgres", durable=False)
    postgres.start()
    postgres.stop()
    hba = postgres.pgdata / "pg_hba.conf"
    hba.write_text(hba.read_text().replace("scram-sha-256", "trust"))
    postgres.password_file.unlink()

    postgres.start()
    try:
        assert "trust" not in [word for line in hba.read_text().splitlines() if not line.startswith("#")
                               for word in line.split()]
        assert mode(postgres.password_file) == 0o600
        assert postgres.password == postgres.password_file.read_text().strip()
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(without_password(postgres.url), connect_timeout=5).close()
        with psycopg.connect(postgres.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        postgres.stop()
