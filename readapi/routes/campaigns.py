"""Campaigns: operator access tokens only (an API key gets 403). Writes call `commands.campaigns`; reads,
the preview included, query the read models and change nothing."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Literal

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import campaigns
from commands.admin import Created
from commands.principal import Principal
from events.ids import parse_id
from readapi.auth import ADMIN, Authenticated, Decoded
from projections.views.campaigns import Campaign, Preview, list_campaigns, preview_campaign, read_campaign
from projections.views.cursors import PAGE_MAX, CursorPage
from readapi.listing import snapshot
from readapi.openapi import LIMIT, SKIP, ListOf, describe, fields_parameter, partial, query
from readapi.services import caught_up, json_response, no_content, run_command, services, written

READ_MODELS = ("campaigns",)
# The audience reads customers, their conversations and messages (core) and their chat sessions (chat).
AUDIENCE_READ_MODELS = ("core", "chat", "campaigns")
LIST_QUERY = (
    query("websiteId", uuid.UUID, "Only this website's campaigns."),
    query("status", Literal[campaigns.STATUSES], "Only campaigns in this state."),  # type: ignore[valid-type]
    dataclasses.replace(LIMIT, description="At most this many campaigns; 0 (the default) means no limit. With "
                                           f"`pagination=cursor`: campaigns per page, 100 by default, at most {PAGE_MAX}."),
    SKIP,
    query("pagination", Literal["cursor"], "`cursor` answers `{items, nextCursor}` pages instead of an array."),
    query("cursor", str, "With `pagination=cursor`: the previous page's `nextCursor`."),
    fields_parameter(Campaign),
)
DRAFT_EXAMPLE = {"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10", "name": "Spring sale",
                 "content": "20% off everything this week", "audience": {"language": ["en"], "seenWithinDays": 30}}


async def _answer(request: Request, principal: Principal, created: Created) -> Response:
    await written(request, created, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(await read_campaign(conn, principal.org_id, created.id), created)


@describe("List the campaigns, by `_id` (an array, or cursor pages with `pagination=cursor`)", ADMIN,
          answer=(ListOf(Campaign), CursorPage[partial(Campaign)]), query=LIST_QUERY,
          operation_id="listCampaigns")
@get("/api/campaigns")
async def list_route(request: Request, principal: Authenticated) -> Response:
    await caught_up(request, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(await list_campaigns(conn, principal.org_id, request.query_params))


@describe("Read a campaign", ADMIN, answer=Campaign, operation_id="getCampaign")
@get("/api/campaigns/{campaign_id:str}")
async def get_route(request: Request, principal: Authenticated, campaign_id: FromPath[str]) -> Response:
    await caught_up(request, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(await read_campaign(conn, principal.org_id, parse_id(campaign_id)))


@describe("The audience's size now and its first 10 recipients; changes nothing", ADMIN,
          answer=Preview, operation_id="previewCampaign")
@get("/api/campaigns/{campaign_id:str}/preview")
async def preview_route(request: Request, principal: Authenticated, campaign_id: FromPath[str]) -> Response:
    await caught_up(request, AUDIENCE_READ_MODELS)
    async with snapshot(request) as conn:
        return json_response(await preview_campaign(conn, principal.org_id, parse_id(campaign_id)))


@describe("Draft a campaign", ADMIN, body=campaigns.CampaignCreate, answer=Campaign, errors=(404,),
          example=DRAFT_EXAMPLE, operation_id="createCampaign")
@post("/api/campaigns", status_code=200)
async def create_route(request: Request, principal: Authenticated,
                       payload: Decoded[campaigns.CampaignCreate]) -> Response:
    return await _answer(request, principal, await run_command(request, campaigns.create_campaign, principal, payload))


@describe("Change a draft (only the fields given)", ADMIN, body=campaigns.CampaignUpdate, answer=Campaign,
          errors=(409,), example={"name": "Summer sale"}, operation_id="updateCampaign")
@put("/api/campaigns/{campaign_id:str}")
async def update_route(request: Request, principal: Authenticated, payload: Decoded[campaigns.CampaignUpdate],
                       campaign_id: FromPath[str]) -> Response:
    created = await run_command(request, campaigns.update_campaign, principal, parse_id(campaign_id), payload)
    return await _answer(request, principal, created)


@describe("Delete a draft", ADMIN, status=204, errors=(409,), operation_id="deleteCampaign")
@delete("/api/campaigns/{campaign_id:str}", status_code=200)  # the Response below sets 204
async def delete_route(request: Request, principal: Authenticated, campaign_id: FromPath[str]) -> Response:
    created = await run_command(request, campaigns.delete_campaign, principal, parse_id(campaign_id))
    return await no_content(request, created, READ_MODELS)


@describe("Schedule a draft, or move a scheduled campaign's time", ADMIN, body=campaigns.CampaignSchedule,
          answer=Campaign, errors=(409,), example={"at": "2030-01-01T09:00:00Z"}, operation_id="scheduleCampaign")
@post("/api/campaigns/{campaign_id:str}/schedule", status_code=200)
async def schedule_route(request: Request, principal: Authenticated, payload: Decoded[campaigns.CampaignSchedule],
                         campaign_id: FromPath[str]) -> Response:
    created = await run_command(request, campaigns.schedule_campaign, principal, parse_id(campaign_id), payload)
    return await _answer(request, principal, created)


@describe("Send a draft or scheduled campaign now", ADMIN, answer=Campaign, errors=(409,), operation_id="sendCampaign")
@post("/api/campaigns/{campaign_id:str}/send", status_code=200)
async def send_route(request: Request, principal: Authenticated, campaign_id: FromPath[str]) -> Response:
    created = await run_command(request, campaigns.send_campaign, principal, parse_id(campaign_id))
    return await _answer(request, principal, created)


@describe("Cancel a campaign before it has finished; what was sent stays", ADMIN, answer=Campaign,
          errors=(409,), operation_id="cancelCampaign")
@post("/api/campaigns/{campaign_id:str}/cancel", status_code=200)
async def cancel_route(request: Request, principal: Authenticated, campaign_id: FromPath[str]) -> Response:
    created = await run_command(request, campaigns.cancel_campaign, principal, parse_id(campaign_id))
    return await _answer(request, principal, created)


ROUTES = [list_route, get_route, preview_route, create_route, update_route, delete_route, schedule_route, send_route,
          cancel_route]
