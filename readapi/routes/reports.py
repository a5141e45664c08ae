"""`GET /api/reports`: the dashboard's charts; `GET /api/reports/operators`, `/teams` and `/labels`: the
figures per operator, team and label (JSON rows, or CSV with `Accept: text/csv`); for operator access tokens."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec
from litestar import Request, Response, get

from readapi.auth import OPERATOR, Authenticated
from readapi.listing import snapshot
from readapi.openapi import describe, query
from projections.views.breakdowns import (LABELS, OPERATORS, TEAMS, Breakdown, LabelRow, OperatorRow, TeamRow,
                                          csv_table, read_breakdown)
from projections.views.parameters import Time
from projections.views.reports import DEFAULT_DAYS, MAX_DAYS, Report, read_report
from readapi.services import caught_up, download_type, json_response

# the breakdowns read the reports read model, and names from the core one
BREAKDOWN_READ_MODELS = ("core", "reports")
CSV = "text/csv"
WEBSITE = query("websiteId", uuid.UUID, "Only this website.")
PERIOD = (
    query("since", Time, "The period's start (RFC 3339); 30 days before `until` by default."),
    query("until", Time, f"The period's end, excluded (RFC 3339); now by default. At most {MAX_DAYS} days after `since`."),
    WEBSITE,
    query("businessHours", bool, "Count response and resolution times within each website's business hours only "
          "(`GET /api/websites/{websiteName}/hours`); all hours by default."))
BREAKDOWN_DESCRIPTION = (
    "Over the period: `conversations` the row's operators replied in and their `replies` (notes, campaign "
    "messages and the AI agent's answers are not replies); the first response (from the visitor's first "
    "message to the team's first reply) and resolution times (from the conversation's opening or latest "
    "reopening to its resolve), median and 90th percentile, in seconds (null without any); `rated`: the "
    "visitors' ratings of the row's replies, `happy` the happy ones among them. An operator's own rating "
    "of a reply is never counted. `Accept: text/csv` answers the same rows as CSV, under a header of "
    "the JSON names.")


@describe("Conversations per day, median first-response time, ratings, busiest hours and totals by website",
          OPERATOR, answer=Report, errors=(404,), query=(
              query("days", Annotated[int, msgspec.Meta(ge=1, le=MAX_DAYS)],
                    f"How many days back, today included; {DEFAULT_DAYS} by default."),
              query("timezone", str, "The IANA time zone days and hours are counted in; UTC by default."),
              query("websiteId", uuid.UUID, "Only this website (the totals by website always show every one).")),
          operation_id="getReports")
@get("/api/reports")
async def reports(request: Request, principal: Authenticated) -> Response:
    await caught_up(request)
    async with snapshot(request) as conn:
        return json_response(await read_report(conn, principal, request.query_params))


def breakdown_route(table: str, breakdown: Breakdown, row_type: type, row_of: str, also: str, operation_id: str):
    """`GET /api/reports/{table}`: the rows of one breakdown, as JSON or CSV."""
    @describe(f"Figures per {row_of}: conversations, replies, first response and resolution times, visitors' ratings",
              OPERATOR, answer=list[row_type], errors=(404,), query=PERIOD, description=BREAKDOWN_DESCRIPTION + also,
              downloads={CSV: "The rows as CSV, under a header of their JSON names."}, operation_id=operation_id)
    @get(f"/api/reports/{table}")
    async def breakdown_report(request: Request, principal: Authenticated) -> Response:
        await caught_up(request, BREAKDOWN_READ_MODELS)
        async with snapshot(request) as conn:
            rows = await read_breakdown(conn, principal, request.query_params, breakdown, row_type)
        if download_type(request, (CSV,)):
            return Response(csv_table(rows, row_type), media_type=CSV, headers={
                "Content-Disposition": f'attachment; filename="{table}.csv"', "Cache-Control": "no-store"})
        return json_response(rows)
    return breakdown_report


ROUTES = [
    reports,
    breakdown_route("operators", OPERATORS, OperatorRow, "operator", "", "getOperatorReport"),
    breakdown_route("teams", TEAMS, TeamRow, "team", " A team's row counts the conversations in that team now.",
                    "getTeamReport"),
    breakdown_route("labels", LABELS, LabelRow, "label",
                    " A label's row counts the conversations that carry it now.", "getLabelReport"),
]
