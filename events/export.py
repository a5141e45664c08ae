"""Exports of an organization's history into a folder: one Parquet file per event type (`<type>.parquet`,
typed columns; every type asked for, empty when none happened) or one JSON Lines file (`events.jsonl`, the lines of `GET /api/events`), and a
`manifest.json` (rows per file, the events left out for want of a public shape, the last position).

pyarrow writes the Parquet files: its `ParquetWriter` takes row groups one at a time, so memory holds two
pages of the store (`events.history.batches` reads the next while this one is written) and one pending
row group per type as Arrow columns, whatever the history's length; DuckDB, which reads the files, would
need the rows handed to it through Python objects or Arrow anyway. A page is decoded in one call
(`events.public.PageDecoder`), each type's rows of it made into Arrow columns together.

Columns: `position` (int64), `occurredAt` (timestamp, UTC: the lines' `at`, which DuckDB's SQL reserves),
`streamId` (string), then the public shape's fields
under their camelCase names: ids as strings, texts, booleans and integers as themselves, times as
timestamps, nested values (lists, maps, structs) as JSON text.
"""

from __future__ import annotations

import types
import typing
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import Callable, Literal

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from events.history import HEAD, LINES, HistoryFilter, Reading, batches, ndjson
from events.public import SHAPE_BY_NAME, PageDecoder, Shape, Stored

Format = Literal["parquet", "jsonl"]
FORMATS: tuple[str, ...] = typing.get_args(Format)
ROW_GROUP = 10_000  # rows a type gathers (pages whole) before they are written out as a Parquet row group
TIMESTAMP = pa.timestamp("us", tz="UTC")
JSON_TEXT = "json"  # a column kind: the value's JSON, as text


def _column_kind(tp) -> tuple[pa.DataType, object]:
    """The Arrow type of a shape field, and the type its stored value is decoded as for that column."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        if len(inner) == 1:
            arrow, decoded = _column_kind(inner[0])
            return arrow, decoded if decoded is msgspec.Raw else decoded | None
    if tp in (uuid.UUID, str):
        return pa.string(), str  # an id is decoded as the text it is stored as: no UUID object made
    if tp is datetime:
        return TIMESTAMP, str  # cast by Arrow, a column at a time
    if tp is bool:
        return pa.bool_(), bool
    if tp is int:
        return pa.int64(), int
    return pa.string(), msgspec.Raw  # nested: its JSON, as stored


@dataclass
class Columns:
    """How one event type is written: its Arrow schema, and the twin fields it is decoded by."""

    schema: pa.Schema
    names: tuple[str, ...]  # the shape's fields, in the schema's order after the line's own columns
    raw: tuple[int, ...]  # the column positions of JSON-text columns

    @classmethod
    def of(cls, shape: type[Shape]) -> "Columns":
        fields = msgspec.structs.fields(shape)
        kinds = [_column_kind(f.type) for f in fields]
        schema = pa.schema([("position", pa.int64()), ("occurredAt", TIMESTAMP), ("streamId", pa.string()),
                            *((column_name(f.encode_name), arrow) for f, (arrow, _) in zip(fields, kinds))])
        raw = tuple(3 + i for i, (_, decoded) in enumerate(kinds) if decoded is msgspec.Raw)
        return cls(schema, tuple(f.name for f in fields), raw)


def _twin_fields(shape: type[Shape]) -> list[tuple]:
    """The event's time as recorded, then the shape's fields, each decoded as its column takes it."""
    fields = msgspec.structs.fields(shape)
    return [("at", str), *((f.name, _column_kind(f.type)[1], _default(f)) if _default(f) is not msgspec.NODEFAULT
                           else (f.name, _column_kind(f.type)[1]) for f in fields)]


LINE_COLUMNS = ("position", "occurredAt", "streamId")


def column_name(field: str) -> str:
    """A shape's field as a column: one named like a line's own column (a launcher's `position`) is prefixed
    with `event`, so the file's columns stay unique."""
    return "event" + field[0].upper() + field[1:] if field in LINE_COLUMNS else field


def _default(f: msgspec.structs.FieldInfo):
    default = f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default  # `= {}` is a factory
    if default is not msgspec.NODEFAULT:
        return msgspec.Raw(msgspec.json.encode(default)) if _column_kind(f.type)[1] is msgspec.Raw else default
    return msgspec.NODEFAULT


COLUMNS = {name: Columns.of(shape) for name, shape in SHAPE_BY_NAME.items()}
ROWS = PageDecoder(_twin_fields)  # decodes pages for the Parquet files


@dataclass
class ParquetType:
    """One type's file, opened at its first row, and its rows waiting for the next row group: as Arrow
    columns, a page's rows at a time (compact, and holding nothing of the page they were decoded from)."""

    path: Path
    columns: Columns
    batches: list[pa.RecordBatch] = field(default_factory=list)
    pending: int = 0
    count: int = 0
    writer: pq.ParquetWriter | None = None

    def add(self, rows: list[Stored]) -> None:
        """A page's rows of this type."""
        events = [row.event for row in rows]
        columns = [[row.position for row in rows], [event.at for event in events], [row.stream_id for row in rows],
                   *(list(map(attrgetter(name), events)) for name in self.columns.names)]
        for index in self.columns.raw:
            columns[index] = [None if raw is None or bytes(raw) == b"null" else bytes(raw).decode()
                              for raw in columns[index]]
        arrays = [pa.array(values, type=pa.string() if kind == TIMESTAMP else kind).cast(kind)
                  for values, kind in zip(columns, self.columns.schema.types)]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.columns.schema))
        self.pending += len(rows)
        if self.pending >= ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        if not self.batches:
            return
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, self.columns.schema, compression="zstd")
        self.writer.write_table(pa.Table.from_batches(self.batches), row_group_size=self.pending)
        self.count += self.pending
        self.batches, self.pending = [], 0

    def close(self) -> None:
        self.flush()
        if self.writer is None:  # no event of this type: its file all the same, with its columns and no row
            self.writer = pq.ParquetWriter(self.path, self.columns.schema, compression="zstd")
        self.writer.close()


class Manifest(msgspec.Struct, rename="camel"):
    format: str
    last_position: int  # export again with --after... to continue: every event up to it is in
    files: dict[str, int]  # file name -> rows
    omitted: dict[str, int]  # events left out for want of a public shape, by type


Progress = Callable[[int, int], None]  # (positions read, positions to read)


def export(conn, flt: HistoryFilter, out: Path, fmt: Format = "parquet",
           progress: Progress | None = None) -> Manifest:
    """Writes the filter's events (up to the store's head as it is when the export starts) into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    head = conn.execute(HEAD).fetchone()[0]
    until = head if flt.until is None else min(head, flt.until)
    writer = _parquet if fmt == "parquet" else _jsonl
    files, omitted = writer(conn, flt, out, until, progress)
    if progress:  # done, even when the range's last positions were other organizations' events
        progress(max(0, until - flt.after), max(0, until - flt.after))
    manifest = Manifest(fmt, max(until, flt.after), files, omitted)
    (out / "manifest.json").write_bytes(msgspec.json.format(msgspec.json.encode(manifest)))
    return manifest


def _parquet(conn, flt: HistoryFilter, out: Path, until: int,
             progress: Progress | None) -> tuple[dict[str, int], dict[str, int]]:
    # a file for every type asked for (every public one by default), so that a query never depends on
    # whether an event of its type happened
    by_type = {topic: ParquetType(out / f"{topic}.parquet", COLUMNS[topic])
               for topic in sorted(COLUMNS if flt.types is None else set(flt.types) & COLUMNS.keys())}
    omitted: Counter = Counter()
    try:
        for rows in batches(conn, flt, flt.after, until, ROWS):
            of_type: defaultdict[str, list[Stored]] = defaultdict(list)
            for row in rows:
                of_type[ROWS.name_of(row.event)].append(row)
            for topic, found in of_type.items():
                kind = by_type.get(topic)
                if kind is None:
                    omitted[topic] += len(found)
                else:
                    kind.add(found)
            if progress:
                progress(rows[-1].position - flt.after, until - flt.after)
    finally:
        for kind in by_type.values():
            kind.close()
    return {kind.path.name: kind.count for kind in by_type.values()}, dict(omitted)


def _jsonl(conn, flt: HistoryFilter, out: Path, until: int,
           progress: Progress | None) -> tuple[dict[str, int], dict[str, int]]:
    reading = Reading(last=flt.after)
    with open(out / "events.jsonl", "wb") as file:
        for rows in batches(conn, flt, flt.after, until, LINES):
            file.write(ndjson(reading.lines(rows)))
            if progress:
                progress(rows[-1].position - flt.after, until - flt.after)
    return {"events.jsonl": reading.emitted}, dict(reading.omitted)
