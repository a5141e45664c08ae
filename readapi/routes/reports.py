"""`GET /api/reports`: the dashboard's charts, for operator access tokens."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec
from litestar import Request, Response, get

from readapi.auth import OPERATOR, Authenticated
from readapi.listing import snapshot
from readapi.openapi import describe, query
from projections.views.reports import DEFAULT_DAYS, MAX_DAYS, Report, read_report
from readapi.services import caught_up, json_response


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


ROUTES = [reports]
