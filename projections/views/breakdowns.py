"""The reports managers ask for: per operator, per team and per label, the conversations handled, the replies, the first response and resolution times (median and 90th
percentile) and the visitors' ratings, over a period and optionally one website. Read from the reports
read model (`projections/reports.py`), in one snapshot; answered as JSON rows or as CSV.

What counts, for a row, in the period [since, until):
- `conversations`: the conversations in which the row's operator(s) sent a reply the visitor sees;
  `replies`: those replies (internal notes, campaign messages and the AI agent's answers are not replies);
- first response: the conversations whose first response (the team's first message after the visitor's
  first) came in the period, credited to the operator who gave it;
- resolution: each resolve in the period, how long the conversation had been open (since its creation or
  its latest reopening), credited to its assignee then, else to the operator who resolved it;
- a team's or a label's row holds the facts of the conversations in that team or with that label now (a
  conversation moved to another team counts for its new one; one with two labels, for both).
- `rated` and `happy`: the visitors' ratings given in the period of the row's replies (a visitor's latest
  rating of a reply counts); an operator's own rating of a reply never counts.
"""

from __future__ import annotations

import csv
import io
import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Mapping, Sequence

import msgspec
import psycopg

from commands.errors import Invalid
from commands.principal import Principal
from projections.views.audit import spreadsheet_cell
from projections.views.business_hours import BusinessHours, all_hours, business_seconds
from projections.views.collections import parse_bool
from projections.views.history_query import parse_time
from projections.views.reports import MAX_DAYS, website_filter

DEFAULT_PERIOD = timedelta(days=30)

# the figures every row carries, after its own id and name
FIGURES: list[tuple[str, Any]] = [
    ("conversations", int), ("replies", int),
    ("first_response_median_seconds", float | None), ("first_response_p90_seconds", float | None),
    ("resolution_median_seconds", float | None), ("resolution_p90_seconds", float | None),
    ("rated", int), ("happy", int),
]
OperatorRow = msgspec.defstruct("OperatorRow", [("operator_id", uuid.UUID), ("display_name", str), *FIGURES],
                                rename="camel", module=__name__)
TeamRow = msgspec.defstruct("TeamRow", [("team_id", uuid.UUID), ("name", str), *FIGURES],
                            rename="camel", module=__name__)
LabelRow = msgspec.defstruct("LabelRow", [("label_id", uuid.UUID), ("name", str), *FIGURES],
                             rename="camel", module=__name__)


def percentile(ordered: Sequence[float], fraction: float) -> float | None:
    """The `fraction` percentile of values sorted ascending, interpolated between the two nearest ranks
    (PostgreSQL's `percentile_cont`); None for no values."""
    if not ordered:
        return None
    rank = fraction * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Period:
    since: datetime
    until: datetime


def parse_period(params: Mapping[str, str], now: datetime) -> Period:
    """`since` and `until` (RFC 3339): the last 30 days up to now by default, at most a year."""
    until = parse_time(params, "until") or now
    try:
        since = parse_time(params, "since") or until - DEFAULT_PERIOD
    except OverflowError:  # 30 days before the calendar's first
        raise Invalid("until is too early", "until") from None
    if since >= until:
        raise Invalid("since must be before until", "since")
    if until - since > timedelta(days=MAX_DAYS):
        raise Invalid(f"the period is at most {MAX_DAYS} days", "since")
    return Period(since, until)


@dataclass(frozen=True)
class Breakdown:
    """How the facts fall into rows: `key` names a fact's row, given `f` (the fact), `c` (its conversation)
    and `joined`; `rows` lists every row of the organization with its name, whether it has facts or not."""

    key: dict[str, str]
    rows: str
    joined: str = ""


# Each fact table, the condition that puts a fact in the period, and what the row makes of its facts.
FACTS = {
    "replies": ("rm_report_messages f", "f.conversation_id", "f.at",
                "count(*), count(DISTINCT f.conversation_id)", "f.operator_id IS NOT NULL"),
    "first_responses": ("rm_report_conversations f", "f.id", "f.first_response_at",
                        "array_agg(ARRAY[c.website_id::text, f.first_customer_at::text, f.first_response_at::text])",
                        "true"),
    "resolutions": ("rm_report_resolutions f", "f.conversation_id", "f.at",
                    "array_agg(ARRAY[c.website_id::text, (f.at - make_interval(secs => f.seconds))::text, f.at::text])",
                    "true"),
    "ratings": ("rm_report_messages f", "f.conversation_id", "f.rating_at",
                "count(*), count(*) FILTER (WHERE f.rating = 'happy')", "f.rating_at IS NOT NULL"),
}

OPERATORS = Breakdown(
    key={"replies": "f.operator_id", "first_responses": "f.first_responder_id", "resolutions": "f.operator_id",
         "ratings": "f.operator_id"},
    # the organization's operators (disabled ones too: their past work still counts), by name
    rows="SELECT o.id, COALESCE(o.display_name, o.email) FROM rm_operators o WHERE o.id = ANY(%(keys)s::uuid[]) "
         "OR o.id IN (SELECT operator_id FROM rm_operator_orgs WHERE org_id = %(org)s AND status <> 'removed')")
TEAMS = Breakdown(key=dict.fromkeys(FACTS, "c.team_id"), rows="SELECT id, name FROM rm_teams WHERE org_id = %(org)s")
LABELS = Breakdown(key=dict.fromkeys(FACTS, "l.label_id"), joined="CROSS JOIN unnest(c.labels) AS l(label_id)",
                   rows="SELECT id, name FROM rm_labels WHERE org_id = %(org)s")


async def facts_by_row(conn: psycopg.AsyncConnection, breakdown: Breakdown, args: dict[str, Any],
                       website: bool) -> dict[str, dict[Any, tuple]]:
    """Per fact table, each row key's aggregate over the period."""
    found = {}
    for name, (table, conversation, at, aggregate, condition) in FACTS.items():
        key = breakdown.key[name]
        sql = (f"SELECT {key}, {aggregate} FROM {table} JOIN rm_report_conversations c ON c.id = {conversation} "
               f"{breakdown.joined} WHERE f.org_id = %(org)s AND {at} >= %(since)s AND {at} < %(until)s AND {condition} "
               f"AND {key} IS NOT NULL {'AND c.website_id = %(website)s' if website else ''} GROUP BY 1")
        found[name] = {row[0]: row[1:] for row in await (await conn.execute(sql, args)).fetchall()}
    return found


Spans = Callable[[list[list[str]]], list[float]]  # (website, start, end) texts -> the seconds each counts


def elapsed(spans: list[list[str]]) -> list[float]:
    return [(datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() for _, start, end in spans]


def open_time(hours: Mapping[uuid.UUID, BusinessHours]) -> Spans:
    """Each span counted in its website's business hours only."""
    return lambda spans: [business_seconds(hours.get(uuid.UUID(website)), datetime.fromisoformat(start),
                                           datetime.fromisoformat(end)) for website, start, end in spans]


def figures(facts: dict[str, dict[Any, tuple]], key: Any, seconds: Spans = elapsed) -> list[Any]:
    conversations_replies = facts["replies"].get(key, (0, 0))
    first = sorted(seconds((facts["first_responses"].get(key) or ([],))[0]))
    resolved = sorted(seconds((facts["resolutions"].get(key) or ([],))[0]))
    rated, happy = facts["ratings"].get(key, (0, 0))
    return [conversations_replies[1], conversations_replies[0], percentile(first, 0.5), percentile(first, 0.9),
            percentile(resolved, 0.5), percentile(resolved, 0.9), rated, happy]


async def read_breakdown(conn: psycopg.AsyncConnection, principal: Principal, params: Mapping[str, str],
                         breakdown: Breakdown, row_type: type) -> list[Any]:
    """The breakdown's rows by name: every row of the organization, and any other operator its facts name
    (one removed since keeps the work done; a deleted team or label is off every conversation already)."""
    period = parse_period(params, datetime.now(timezone.utc))
    website_id = await website_filter(conn, principal, params)
    args = {"org": principal.org_id, "since": period.since, "until": period.until, "website": website_id}
    facts = await facts_by_row(conn, breakdown, args, website_id is not None)
    args["keys"] = list({key for found in facts.values() for key in found})
    named = await (await conn.execute(breakdown.rows, args)).fetchall()
    seconds = open_time(await all_hours(conn)) if parse_bool(params, "businessHours") else elapsed
    return [row_type(key, name, *figures(facts, key, seconds))
            for key, name in sorted(named, key=lambda row: (row[1].casefold(), str(row[0])))]


def csv_table(rows: list[Any], row_type: type) -> bytes:
    """The rows as CSV, under a header of their JSON names; a name a spreadsheet would run as a formula is
    quoted as text."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(field.encode_name for field in msgspec.structs.fields(row_type))
    for row in rows:
        writer.writerow(spreadsheet_cell(value) for value in msgspec.structs.astuple(row))
    return out.getvalue().encode()
