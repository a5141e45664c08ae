"""The operator's notification centre over HTTP: the list, marking read, and the channels of each kind.
Operator access tokens only (an API key has no one to notify)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Request, Response, get, post, put

from commands import notifications
from commands.errors import NotFound
from projections.views.collections import parse_bool, parse_int
from projections.views.notifications import (PAGE_DEFAULT, NotificationPage, Unread, notification_page, own_notifications,
                                              preferences, unread_count)
from projections.views.parameters import query
from readapi.auth import OPERATOR, Authenticated, Decoded
from readapi.openapi import describe
from readapi.services import caught_up, json_response, run_command, services, written

READ_MODELS = ("notifications",)
KINDS = ("`conversation.new` (a visitor opened a conversation), `message.new` (a visitor wrote in a conversation "
         "assigned to you, or one you replied in), `mention` (a teammate's internal note names `@Your Name` or "
         "`@your-email-local-part`), `assignment`, `handoff` (the AI agent handed a conversation to the team), "
         "`webhook.disabled` (an endpoint was disabled after failures: admins and owners)")


async def preferences_answer(request: Request, principal, created=None) -> Response:
    async with services(request).pool.connection() as conn:
        chosen = await preferences(conn, principal.org_id, principal.operator_id)
    return json_response(msgspec.json.decode(msgspec.json.encode(chosen), type=notifications.Preferences), created)


@describe("Your notifications, newest first, with how many are unread", OPERATOR, answer=NotificationPage,
          query=(query("cursor", str, "The previous page's `nextCursor`."),
                 query("limit", Annotated[int, msgspec.Meta(ge=1)], "At most this many (50 by default, capped "
                       "at 200)."),
                 query("unread", bool, "Only the unread ones.")),
          description="Kinds: " + KINDS + ". `text` is plain text (render it as text); `conversationId` links to "
                      "the source. New ones also arrive live on `GET /api/realtime` as `notification.created`.",
          operation_id="listNotifications")
@get("/api/notifications")
async def list_notifications(request: Request, principal: Authenticated) -> Response:
    params = request.query_params
    limit, unread = parse_int(params, "limit", PAGE_DEFAULT), parse_bool(params, "unread") or False
    await caught_up(request, READ_MODELS)
    async with services(request).pool.connection() as conn:
        page = await notification_page(conn, principal.org_id, principal.operator_id, params.get("cursor"), limit,
                                       unread)
    return json_response(page)


@describe("Mark notifications read: `{ids}`, or `{all: true}` for every one you have", OPERATOR,
          body=notifications.MarkRead, answer=Unread, errors=(404,), example={"all": True},
          description="An id that is not one of your notifications is 404, and nothing is marked.",
          operation_id="markNotificationsRead")
@post("/api/notifications/read", status_code=200)
async def mark_read(request: Request, principal: Authenticated, payload: Decoded[notifications.MarkRead]) -> Response:
    ids = notifications.check_mark(payload)
    if ids:
        await caught_up(request, READ_MODELS)
        async with services(request).pool.connection() as conn:
            if len(await own_notifications(conn, principal.org_id, principal.operator_id, ids)) != len(ids):
                raise NotFound("notification not found", "ids")
    created = await run_command(request, notifications.mark_read, principal, ids, payload.all)
    await written(request, created, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(Unread(await unread_count(conn, principal.org_id, principal.operator_id)), created)


@describe("Your channels for each kind of notification", OPERATOR, answer=notifications.Preferences,
          description="`{<kind>: {dashboard, desktop, email}}` for every kind: " + KINDS + ". Unset, a kind is on "
                      "in the dashboard and on the desktop, and by e-mail for `conversation.new`, `mention`, "
                      "`assignment` and `webhook.disabled`.", operation_id="getNotificationPreferences")
@get("/api/operators/me/notifications")
async def get_preferences(request: Request, principal: Authenticated) -> Response:
    await caught_up(request, READ_MODELS)
    return await preferences_answer(request, principal)


@describe("Choose your channels for kinds of notification (the kinds left out stay as they are)", OPERATOR,
          body=notifications.Preferences, answer=notifications.Preferences,
          example={"message.new": {"dashboard": True, "desktop": False, "email": False}},
          operation_id="updateNotificationPreferences")
@put("/api/operators/me/notifications")
async def put_preferences(request: Request, principal: Authenticated,
                          payload: Decoded[notifications.Preferences]) -> Response:
    await caught_up(request, READ_MODELS)
    async with services(request).pool.connection() as conn:
        chosen = {**await preferences(conn, principal.org_id, principal.operator_id), **payload.given()}
    created = await run_command(request, notifications.set_preferences, principal, chosen)
    await written(request, created, READ_MODELS)
    return await preferences_answer(request, principal, created)


ROUTES = [list_notifications, mark_read, get_preferences, put_preferences]
