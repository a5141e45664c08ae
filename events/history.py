"""Reading an organization's history out of the event store, for analysts: which events a request asks
for (`HistoryFilter`), the one SQL statement that pages through them by position, and each row as the
public line the events API, the exports and the audit trail all show.

Pages are windows of positions (`last < position <= last + PAGE`), one short statement each, so nothing is
held open between pages and memory holds a page or two, however long the history. The events API and the
exports read `batches`: a window of BATCH positions as one value that PostgreSQL builds, decoded in one
call (`events.public.PageDecoder`), the next read while this one is worked on. A window, not a LIMIT: the
filters look inside the JSON, which the planner cannot estimate, and with a LIMIT it may choose to scan
and sort the whole table for every page; a range of the primary key is read by its index whatever it
holds. Appends commit in position order (the store's table lock), so paging never passes an event that
commits later with a smaller position.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, AsyncIterator, Iterable, Iterator, Sequence

import msgspec

from events.public import Line, PageDecoder, Stored, verbatim_fields
from events.store import EVENTS_TABLE

PAGE = 2000  # positions a page of rows covers
BATCH = 10_000  # positions a page read as one value (`batches`) covers: a few MB

# The event's JSON, parsed by PostgreSQL, for the filters that look inside it.
_JSON = "convert_from(e.state, 'UTF8')::json"
# The organization: the rows whose JSON holds `"org_id":"<id>"` somewhere, found without parsing it (PostgreSQL
# parsing every row's JSON cost three times the page's read); `pages` then keeps those whose own org_id it
# is (a nested value, a visitor's metadata key, could hold those bytes too).
_ORG = "position(%(org_marker)s in e.state) > 0"


class _Owner(msgspec.Struct):
    org_id: str


_owner = msgspec.json.Decoder(_Owner)


# An event belongs to a website when it names one, or when its stream's first event does (a message's
# rating, a conversation's resolution, a subscription's disabling: each stream starts with a creation that
# names the website).
_WEBSITE = (f"({_JSON}->>'website_id' = %(website)s OR EXISTS (SELECT FROM {EVENTS_TABLE} f "
            "WHERE f.originator_id = e.originator_id AND f.originator_version = 1 "
            "AND convert_from(f.state, 'UTF8')::json->>'website_id' = %(website)s))")


@dataclass(frozen=True)
class HistoryFilter:
    """An organization's events, narrowed: positions in (after, until], times in [since, until_time],
    some types, one website, one conversation."""

    org_id: uuid.UUID
    after: int = 0
    until: int | None = None
    since: datetime | None = None
    until_time: datetime | None = None
    types: tuple[str, ...] | None = None
    website_id: uuid.UUID | None = None
    conversation_id: uuid.UUID | None = None

    def page_query(self) -> tuple[str, dict[str, Any]]:
        """One page of the filter's events in (%(after)s, %(until)s]: position, stream, type, stored JSON."""
        where = ["e.notification_id > %(after)s", "e.notification_id <= %(until)s", _ORG]
        params: dict[str, Any] = {"org_marker": b'"org_id":"%s"' % str(self.org_id).encode()}
        if self.types is not None:
            where.append("e.topic = ANY(%(types)s)")
            params["types"] = list(self.types)
        if self.since is not None:
            where.append(f"({_JSON}->>'at')::timestamptz >= %(since)s")
            params["since"] = self.since
        if self.until_time is not None:
            where.append(f"({_JSON}->>'at')::timestamptz <= %(until_time)s")
            params["until_time"] = self.until_time
        if self.conversation_id is not None:
            where.append(f"{_JSON}->>'conversation_id' = %(conversation)s")
            params["conversation"] = str(self.conversation_id)
        if self.website_id is not None:
            where.append(_WEBSITE)
            params["website"] = str(self.website_id)
        sql = (f"SELECT e.notification_id, e.originator_id::text, e.topic, e.state FROM {EVENTS_TABLE} e "
               f"WHERE {' AND '.join(where)} ORDER BY e.notification_id")
        return sql, params

    def batch_query(self) -> tuple[str, dict[str, Any]]:
        """`page_query`'s events as one value, `[position,"stream id",{stored JSON}],...` (bytes, no row of
        its own each, NULL when none): what `PageDecoder` decodes in one call."""
        sql, params = self.page_query()
        where = sql[sql.index(" WHERE "):sql.rindex(" ORDER BY ")]
        return (f"SELECT string_agg(convert_to('[' || e.notification_id || ',\"' || e.originator_id || '\",', 'UTF8') "
                f"|| e.state || ']'::bytea, ','::bytea ORDER BY e.notification_id) FROM {EVENTS_TABLE} e{where}",
                params)

    def own_rows(self, rows: list[Stored]) -> list[Stored]:
        """The decoded page's events that are the organization's own."""
        org = str(self.org_id)
        return [row for row in rows if row.event.org_id == org]

    def own(self, rows: list["Row"]) -> list["Row"]:
        """The page's rows that are the organization's own events."""
        org = str(self.org_id)
        return [row for row in rows if _owner.decode(row[3]).org_id == org]


Row = tuple[int, str, str, bytes]  # position, stream id, type, stored JSON
HEAD = f"SELECT coalesce(max(notification_id), 0) FROM {EVENTS_TABLE}"  # every position up to it has committed


def pages(conn, flt: HistoryFilter, after: int, until: int) -> Iterator[list[Row]]:
    """The filter's events in (after, until], a page at a time, on a synchronous connection."""
    sql, params = flt.page_query()
    while after < until:
        upper = min(after + PAGE, until)
        if rows := flt.own(conn.execute(sql, {**params, "after": after, "until": upper}, prepare=True).fetchall()):
            yield rows
        after = upper


def batches(conn, flt: HistoryFilter, after: int, until: int, decoder: PageDecoder) -> Iterator[list[Stored]]:
    """The filter's events in (after, until], decoded a page of BATCH positions at a time, on a synchronous
    connection: the next page is read on another thread while the caller works on this one (PostgreSQL
    makes it meanwhile), so at most two pages are held."""
    sql, params = flt.batch_query()
    cursor = conn.cursor(binary=True)

    def read(lower: int) -> bytes | None:
        return cursor.execute(sql, {**params, "after": lower, "until": min(lower + BATCH, until)},
                              prepare=True).fetchone()[0]

    with ThreadPoolExecutor(1, thread_name_prefix="history-read") as reader:
        coming = reader.submit(read, after) if after < until else None
        while coming is not None:
            page, after = coming.result(), min(after + BATCH, until)
            coming = reader.submit(read, after) if after < until else None
            if page is not None and (rows := flt.own_rows(decoder.decode(page))):
                yield rows


async def batches_async(pool, flt: HistoryFilter, after: int, until: int,
                        decoder: PageDecoder) -> AsyncIterator[list[Stored]]:
    """`batches` on the event loop: the next page is asked for (on a pool connection of its own) before
    this one is decoded and handed on."""
    sql, params = flt.batch_query()

    async def read(lower: int) -> bytes | None:
        async with pool.connection() as conn:
            cursor = conn.cursor(binary=True)
            await cursor.execute(sql, {**params, "after": lower, "until": min(lower + BATCH, until)}, prepare=True)
            return (await cursor.fetchone())[0]

    coming = asyncio.ensure_future(read(after)) if after < until else None
    try:
        while coming is not None:
            page, after = await coming, min(after + BATCH, until)
            coming = asyncio.ensure_future(read(after)) if after < until else None
            if page is not None and (rows := flt.own_rows(decoder.decode(page))):
                yield rows
    finally:
        if coming is not None:
            coming.cancel()


async def pages_async(pool, flt: HistoryFilter, after: int, until: int) -> AsyncIterator[list[Row]]:
    """`pages` on the event loop, a pool connection taken for each page only."""
    sql, params = flt.page_query()
    while after < until:
        upper = min(after + PAGE, until)
        async with pool.connection() as conn:
            rows = await (await conn.execute(sql, {**params, "after": after, "until": upper}, prepare=True)).fetchall()
        if rows := flt.own(rows):
            yield rows
        after = upper


LINES = PageDecoder(verbatim_fields)  # decodes pages for `Reading.lines`


@dataclass
class Reading:
    """What a read of the history has got to: the last position it covered, and the events it left out
    for want of a public shape, by type."""

    last: int = 0
    emitted: int = 0
    omitted: Counter = field(default_factory=Counter)

    def lines(self, rows: Sequence[Stored]) -> list[Line]:
        """The page's events (decoded by `LINES`) as public lines; one of a type without a shape is
        counted, not shown."""
        out, shape_of, astuple = [], LINES.shape_of, msgspec.structs.astuple
        for row in rows:
            event = row.event
            found = shape_of.get(event.__class__)
            if found is None:
                self.omitted[LINES.name_of(event)] += 1
            else:
                name, shape = found
                out.append(Line(row.position, name, event.at, row.stream_id, shape(*astuple(event)[2:])))
        if rows:
            self.last = rows[-1].position
        self.emitted += len(out)
        return out

    def trailer(self) -> "Trailer":
        return Trailer(TrailerBody(self.last, dict(self.omitted)))


class TrailerBody(msgspec.Struct, rename="camel"):
    last_position: int  # resume with after=lastPosition
    omitted: dict[str, int]  # events left out for want of a public shape, by type


class Trailer(msgspec.Struct):
    """The last line of a history that ends: tells it apart from an event line (which has `type`)."""

    trailer: TrailerBody


_encoder = msgspec.json.Encoder()


def ndjson(items: Iterable[msgspec.Struct]) -> bytes:
    return _encoder.encode_lines(items)
