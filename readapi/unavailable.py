"""When the service cannot answer now but will soon: 503 with Retry-After. Apart from readapi/problems.py,
which renders it, so that what raises it (readapi/services.py) need not import the error handlers."""

from __future__ import annotations

import psycopg
from eventsourcing import persistence

# What PostgreSQL being out of reach looks like to us: a refused or broken connection, a pool checkout
# that timed out (psycopg_pool's PoolTimeout is an OperationalError), a server shutting down, and the
# same errors as the `eventsourcing` library translates them on the store's synchronous connections.
DATABASE_UNAVAILABLE = (psycopg.OperationalError, psycopg.InterfaceError, persistence.OperationalError,
                        persistence.InterfaceError)
DATABASE_DOWN = "the database is unreachable; retry shortly"
RETRY_AFTER_SECONDS = 2


class Unavailable(Exception):
    """503 with Retry-After: the request cannot be served right now, and retrying it soon can succeed."""

    def __init__(self, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
