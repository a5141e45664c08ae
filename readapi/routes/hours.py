"""A website's business hours over HTTP: read by every operator, set by admins and owners."""

from __future__ import annotations

from litestar import Request, Response, get, put
from litestar.params import FromPath

from commands import hours
from commands.agent import website_by_name
from projections.views.business_hours import DEFAULT_HOURS, BusinessHours, website_hours
from readapi.auth import ADMIN, OPERATOR, Authenticated, Decoded
from readapi.openapi import describe
from readapi.services import caught_up, json_response, run_command, services, written

READ_MODELS = ("hours",)
RULES = ("In the website's IANA `timezone`, `weekly` maps mon..sun to [start, end] ranges as HH:MM (a day left out "
         "is closed; an end at or before its start runs past midnight; an end may be 24:00); `holidays` are "
         "closed dates (YYYY-MM-DD; a range that began the evening before runs to its end); `awayMessage` is "
         "posted once in a conversation whose visitor writes while the website is closed (null: none). A website "
         "never given hours is always open (every day 00:00-24:00).")


async def answer(request: Request, principal, website_name: str, created=None) -> Response:
    website_id = await run_command(request, website_by_name, principal, website_name)
    if created is None:
        await caught_up(request, READ_MODELS)
    else:
        await written(request, created, READ_MODELS)
    async with services(request).pool.connection() as conn:
        found = await website_hours(conn, website_id)
    return json_response(found or DEFAULT_HOURS, created)


@describe("The website's business hours", OPERATOR, answer=BusinessHours, description=RULES,
          operation_id="getWebsiteHours", tag="websites")
@get("/api/websites/{website_name:str}/hours")
async def get_hours(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    return await answer(request, principal, website_name)


@describe("Set the website's business hours, whole (admins and owners); a bad time zone, day, time or date is 400 "
          "and nothing is stored", ADMIN, body=hours.HoursUpdate, answer=BusinessHours, description=RULES,
          example={"timezone": "Europe/Paris", "weekly": {"mon": [["09:00", "17:00"]], "tue": [["09:00", "17:00"]]},
                   "holidays": ["2026-12-25"], "awayMessage": "We're away: we usually reply within a day."},
          operation_id="setWebsiteHours", tag="websites")
@put("/api/websites/{website_name:str}/hours")
async def put_hours(request: Request, principal: Authenticated, payload: Decoded[hours.HoursUpdate],
                    website_name: FromPath[str]) -> Response:
    website_id = await run_command(request, website_by_name, principal, website_name)
    created = await run_command(request, hours.set_hours, principal, website_id, payload)
    return await answer(request, principal, website_name, created)


ROUTES = [get_hours, put_hours]
