"""The parameters a view takes from a request (its query-string and header names, with their types) and
the partial shape of a record that `fields` projects: declared beside the view, documented by readapi."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal

import msgspec


# A time in a query: RFC 3339 with its time zone (the views refuse one without).
Time = Annotated[datetime, msgspec.Meta(tz=True)]
# An event-store position (digits) or a Time: the views tell them apart by their form.
PositionOrTime = Annotated[str, msgspec.Meta(extra_json_schema={
    "anyOf": [{"pattern": "^[0-9]+$"}, {"format": "date-time"}]})]


@dataclass(frozen=True)
class Parameter:
    name: str
    location: Literal["query", "header"]
    type: Any
    description: str = ""
    required: bool = False


def query(name: str, type_: Any = str, description: str = "", required: bool = False) -> Parameter:
    return Parameter(name, "query", type_, description, required)


def header(name: str, type_: Any = str, description: str = "", required: bool = False) -> Parameter:
    return Parameter(name, "header", type_, description, required)


@cache
def partial(shape: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """`shape` with every field but `_id` optional: a record as `fields` projects it."""
    fields = msgspec.structs.fields(shape)
    return msgspec.defstruct(
        f"{shape.__name__}Fields",
        [(f.name, f.type) if f.encode_name == "_id" else (f.name, f.type | msgspec.UnsetType, msgspec.UNSET)
         for f in sorted(fields, key=lambda f: f.encode_name != "_id")],
        rename={f.name: f.encode_name for f in fields}, forbid_unknown_fields=True)
