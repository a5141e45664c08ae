"""Settings, read from `PARLEY_*` environment variables. `ENVIRONMENT` is the one list of them."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec


class Settings(msgspec.Struct, kw_only=True):
    database_url: str | None = None
    nats_url: str | None = None
    qdrant_url: str | None = None
    data_dir: Path = Path(".parley")
    host: str = "127.0.0.1"
    port: int = 8000
    role: str = "all"
    log_level: str = "INFO"
    embedded_fsync: bool = True
    read_wait_seconds: float = 2.0
    max_body_bytes: int = 1_048_576
    db_pool_size: int = 10
    nats_stream: str = "PARLEY_EVENTS"


# variable -> (setting, meaning), documented in the README from this table
ENVIRONMENT: dict[str, tuple[str, str]] = {
    "PARLEY_DATABASE_URL": ("database_url", "PostgreSQL URL; unset starts the embedded PostgreSQL"),
    "PARLEY_NATS_URL": ("nats_url", "NATS URL (JetStream enabled); unset starts the embedded nats-server"),
    "PARLEY_QDRANT_URL": ("qdrant_url", "Qdrant server URL; unset uses Qdrant local mode under the data directory, "
                          "which only one process can open (so API and workers split across processes need it)"),
    "PARLEY_DATA_DIR": ("data_dir", "data directory for the embedded servers and local files (default ./.parley)"),
    "PARLEY_HOST": ("host", "address the API listens on (default 127.0.0.1)"),
    "PARLEY_PORT": ("port", "port the API listens on (default 8000; 0 picks a free one)"),
    "PARLEY_ROLE": ("role", "api, workers or all (default all)"),
    "PARLEY_LOG_LEVEL": ("log_level", "logging level (default INFO)"),
    "PARLEY_EMBEDDED_FSYNC": ("embedded_fsync", "0 turns off fsync in the embedded PostgreSQL (tests only)"),
    "PARLEY_READ_WAIT_SECONDS": ("read_wait_seconds", "longest a read waits for its writer's position (default 2)"),
    "PARLEY_MAX_BODY_BYTES": ("max_body_bytes", "largest accepted request body (default 1 MiB)"),
    "PARLEY_DB_POOL_SIZE": ("db_pool_size", "read-model connections per API process (default 10)"),
    "PARLEY_NATS_STREAM": ("nats_stream", "JetStream stream name, so deployments can share a NATS (default PARLEY_EVENTS)"),
}


def load_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {}
    for variable, (name, _) in ENVIRONMENT.items():
        raw = os.environ.get(variable)
        if raw is not None and raw != "":
            values[name] = raw
    values.update({k: v for k, v in overrides.items() if v is not None})
    return msgspec.convert(values, Settings, strict=False)
