"""Read models made of their tables and a handler for each kind of event they change on.

A kind that comes in runs, a conversation's messages, may instead have a handler for a whole run of
consecutive events of that kind, which writes them in one statement: its rows travel as one JSON
parameter (`as_json`) that the statement reads with `json_to_recordset`, since each statement and each
parameter cost the projection's process more than the rows they carry."""

from __future__ import annotations

import itertools
from typing import Any, Awaitable, Callable, ClassVar, Iterator, Sequence

import msgspec
import psycopg

from events.store import Recorded

Handler = Callable[[psycopg.AsyncConnection, Any], Awaitable[None]]
RunHandler = Callable[[psycopg.AsyncConnection, list[Any]], Awaitable[None]]


class ReadModel:
    name: ClassVar[str]
    ddl: ClassVar[str]  # creates the tables (and their functions), if missing
    tables: ClassVar[tuple[str, ...]]
    functions: ClassVar[tuple[str, ...]] = ()  # signatures of the functions the DDL creates
    handlers: ClassVar[dict[type, Handler]]
    run_handlers: ClassVar[dict[type, RunHandler]] = {}

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(self.ddl)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute("DROP TABLE IF EXISTS " + ", ".join(self.tables))
        if self.functions:
            await conn.execute("DROP FUNCTION IF EXISTS " + ", ".join(self.functions))

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        await self.apply_all(conn, [recorded])

    async def apply_all(self, conn: psycopg.AsyncConnection, batch: Sequence[Recorded]) -> None:
        """Applies the batch in order, run by run of the same kind of event."""
        for kind, run in runs(batch):
            if apply_run := self.run_handlers.get(kind):
                await apply_run(conn, [recorded.event for recorded in run])
            elif handler := self.handlers.get(kind):
                for recorded in run:
                    await handler(conn, recorded.event)


def runs(batch: Sequence[Recorded]) -> Iterator[tuple[type, list[Recorded]]]:
    """The batch as runs of consecutive events of one kind, in order."""
    for kind, run in itertools.groupby(batch, key=lambda recorded: type(recorded.event)):
        yield kind, list(run)


def as_json(events: list[Any]) -> str:
    return msgspec.json.encode(events).decode()


# A run of `ConversationCreated` (a campaign's batch opens one conversation per recipient) as the rows of
# one statement, in the run's order (`n`): `FROM {CONVERSATIONS_CREATED}` with `as_json(events)`.
CONVERSATIONS_CREATED = (
    "ROWS FROM (json_to_recordset(%s::json) AS (conversation_id uuid, org_id uuid, website_id uuid, customer_id uuid, "
    "at timestamptz, operator_only boolean, metadata jsonb)) WITH ORDINALITY "
    "AS c(conversation_id, org_id, website_id, customer_id, at, operator_only, metadata, n)")
