"""A website's widget settings: edited by its admins (the dashboard's Websites page), and read by the widget
itself at start-up, without a credential, as `GET /api/chat/config` (cacheable for a short while)."""

from __future__ import annotations

import hashlib

import msgspec
from litestar import Request, Response, get, put
from litestar.params import FromPath

from commands import agent, websites
from commands.admin import Created
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from events.ids import parse_id
from projections.views.websites import ChatConfig, WidgetView, chat_config, widget_settings
from readapi.auth import ADMIN, PUBLIC, Authenticated, Decoded
from readapi.cors import check_origin
from readapi.openapi import describe, query
from readapi.services import caught_up, json_response, run_command, services, written

# long enough to spare a busy site a request per page view, short enough that a change shows soon
CONFIG_MAX_AGE = 60


async def widget_response(request: Request, principal: Principal, website_name: str, created: Created | None) -> Response:
    website_id = created.id if created else await run_command(request, agent.website_by_name, principal, website_name)
    if created is None:
        await caught_up(request)
    else:
        await written(request, created)
    async with services(request).pool.connection() as conn:
        found = await widget_settings(conn, principal.org_id, website_id)
    if found is None:
        raise NotFound("website not found")
    return json_response(found, created)


@describe("The website's widget settings", ADMIN, answer=WidgetView, tag="websites", operation_id="getWebsiteWidget")
@get("/api/websites/{website_name:str}/widget")
async def get_widget(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    return await widget_response(request, principal, website_name, None)


@describe("Change the website's widget settings (only the fields given)", ADMIN, body=websites.WidgetSettings,
          answer=WidgetView, tag="websites", operation_id="updateWebsiteWidget",
          example={"brandColor": "#0f766e", "title": "Acme support", "position": "left", "theme": "auto",
                   "language": "fr"},
          description="A null text (`title`, `welcomeMessage`, `awayMessage`, `launcherLabel`) shows the widget's "
                      "own words in the visitor's language. The brand color is the website's own "
                      "(`PUT /api/websites/{websiteName}` changes it too). The widget reads the settings at its "
                      "next page load.")
@put("/api/websites/{website_name:str}/widget")
async def update_widget(request: Request, principal: Authenticated, payload: Decoded[websites.WidgetSettings],
                        website_name: FromPath[str]) -> Response:
    created = await run_command(request, websites.configure_widget, principal, website_name, payload)
    return await widget_response(request, principal, website_name, created)


@describe("What the widget starts with: the website's widget settings, whether the team is open and online",
          PUBLIC, answer=ChatConfig, errors=(404,), tag="chat", operation_id="getChatConfig",
          query=(query("websiteId", str, "The website.", required=True),),
          description="No credential. Cacheable: `Cache-Control: public, max-age=60` and an `ETag`; a request "
                      "with `If-None-Match` naming the current one is answered 304 with no body. `open` and "
                      "`nextOpenAt` follow the team's business hours (always open while none are set); "
                      "`online` says whether an operator of the team is online (their availability).")
@get("/api/chat/config")
async def get_config(request: Request) -> Response:
    raw = request.query_params.get("websiteId")
    if not raw:
        raise Invalid("websiteId is required", "websiteId")
    website_id = parse_id(raw)
    await check_origin(request, website_id)
    async with services(request).pool.connection() as conn:
        config = website_id and await chat_config(conn, website_id)
    if not config:
        raise NotFound("website not found", "websiteId")
    body = msgspec.json.encode(config)
    etag = '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'
    headers = {"ETag": etag, "Cache-Control": f"public, max-age={CONFIG_MAX_AGE}"}
    if request.headers.get("if-none-match") == etag:
        return Response(b"", status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


ROUTES = [get_widget, update_widget, get_config]
