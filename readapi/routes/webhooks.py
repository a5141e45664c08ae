"""Webhook subscriptions and their delivery log: operator access tokens only."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

import msgspec
from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import webhooks
from commands.admin import Created
from commands.errors import Conflict, NotFound
from commands.principal import Principal
from projections.views import webhook_deliveries as delivery_log
from events.ids import parse_id
from readapi.auth import ADMIN, Authenticated, Decoded
from projections.views.collections import (
    WEBHOOK_SUBSCRIPTIONS, WebhookSubscription, WebhookSubscriptionWithSecret, read_list, read_one,
)
from readapi.openapi import ID, collection_query, describe, query
from readapi.services import caught_up, json_response, run_command, services, written

PROJECTIONS = ("core", "webhooks")
DELIVERIES_QUERY = (
    query("limit", Annotated[int, msgspec.Meta(ge=0, le=delivery_log.PAGE_MAX)],
          f"At most this many deliveries ({delivery_log.PAGE_DEFAULT} by default)."),
    query("cursor", str, "The previous page's `nextCursor`."),
    query("status", Literal[delivery_log.STATUSES], "Only deliveries in this state."),
)


class Deleted(msgspec.Struct, rename={"id": "_id"}):
    id: uuid.UUID
    deleted: bool


class Redelivering(msgspec.Struct):
    redelivering: int


async def subscription(request: Request, principal: Principal, subscription_id: uuid.UUID | None,
                       created: Created | None = None) -> WebhookSubscription:
    svc = services(request)
    if created is None:
        await caught_up(request, PROJECTIONS)
    else:
        await written(request, created, PROJECTIONS)
    async with svc.pool.connection() as conn:
        return await read_one(conn, WEBHOOK_SUBSCRIPTIONS, principal, subscription_id)


@describe("List the webhook subscriptions", ADMIN, answer=list[WebhookSubscription],
          query=collection_query(WEBHOOK_SUBSCRIPTIONS)[:-1], operation_id="listWebhookSubscriptions")
@get("/api/webhooksubscriptions")
async def list_subscriptions(request: Request, principal: Authenticated) -> Response:
    svc = services(request)
    await caught_up(request, PROJECTIONS)
    async with svc.pool.connection() as conn:
        return json_response(await read_list(conn, WEBHOOK_SUBSCRIPTIONS, principal, request.query_params))


@describe("Subscribe a URL to events; the answer alone carries the signing secret", ADMIN,
          links={target: {"webhookSubscriptionId": ID} for target in (
              "updateWebhookSubscription", "deleteWebhookSubscription", "listWebhookDeliveries",
              "recoverWebhookDeliveries")},
          body=webhooks.WebhookCreate, answer=WebhookSubscriptionWithSecret,
          example={"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10", "url": "https://example.com/hooks",
                   "events": ["message.created"]}, operation_id="createWebhookSubscription")
@post("/api/webhooksubscriptions", status_code=200)
async def create_subscription(request: Request, principal: Authenticated,
                              payload: Decoded[webhooks.WebhookCreate]) -> Response:
    created, secret = await run_command(request, webhooks.subscribe, services(request).sealer, principal, payload,
                                        services(request).settings.webhook_allow_private)
    saved = await subscription(request, principal, created.id, created)
    return json_response(WebhookSubscriptionWithSecret(**msgspec.structs.asdict(saved), secret=secret), created)


@describe("Change a webhook subscription (only the fields given)", ADMIN, body=webhooks.WebhookUpdate,
          answer=WebhookSubscription, example={"active": True}, operation_id="updateWebhookSubscription")
@put("/api/webhooksubscriptions/{subscription_id:str}")
async def update_subscription(request: Request, principal: Authenticated, payload: Decoded[webhooks.WebhookUpdate],
                              subscription_id: FromPath[str]) -> Response:
    created = await run_command(request, webhooks.update, principal, parse_id(subscription_id), payload,
                                services(request).settings.webhook_allow_private)
    return json_response(await subscription(request, principal, created.id, created), created)


@describe("Delete a webhook subscription", ADMIN, answer=Deleted, operation_id="deleteWebhookSubscription")
@delete("/api/webhooksubscriptions/{subscription_id:str}", status_code=200)
async def delete_subscription(request: Request, principal: Authenticated, subscription_id: FromPath[str]) -> Response:
    created = await run_command(request, webhooks.delete, principal, parse_id(subscription_id))
    await written(request, created, PROJECTIONS)
    return json_response(Deleted(created.id, True), created)


@describe("The subscription's delivery log, with each delivery's attempts", ADMIN,
          answer=delivery_log.DeliveryPage, query=DELIVERIES_QUERY, operation_id="listWebhookDeliveries")
@get("/api/webhooksubscriptions/{subscription_id:str}/deliveries")
async def list_deliveries(request: Request, principal: Authenticated, subscription_id: FromPath[str]) -> Response:
    found = await subscription(request, principal, parse_id(subscription_id))
    async with services(request).pool.connection() as conn:
        return json_response(await delivery_log.deliveries_page(conn, found.id, request.query_params))


@describe("Deliver one delivery again", ADMIN, answer=delivery_log.WebhookDelivery, errors=(409,), position=False,
          operation_id="retryWebhookDelivery")
@post("/api/webhooksubscriptions/{subscription_id:str}/deliveries/{delivery_id:str}/retry", status_code=200)
async def retry_delivery(request: Request, principal: Authenticated, subscription_id: FromPath[str],
                         delivery_id: FromPath[str]) -> Response:
    found = await active_subscription(request, principal, subscription_id)
    target = parse_id(delivery_id)
    async with services(request).pool.connection() as conn:
        if target is None or not await delivery_log.redeliver(conn, found.id, target):
            raise NotFound("delivery not found")
        return json_response(await delivery_log.delivery(conn, found.id, target))


@describe("Deliver again everything since a time", ADMIN, body=delivery_log.Recover, answer=Redelivering,
          errors=(409,), position=False, example={"since": "2026-11-23T00:00:00Z"},
          operation_id="recoverWebhookDeliveries")
@post("/api/webhooksubscriptions/{subscription_id:str}/recover", status_code=200)
async def recover_deliveries(request: Request, principal: Authenticated, payload: Decoded[delivery_log.Recover],
                             subscription_id: FromPath[str]) -> Response:
    found = await active_subscription(request, principal, subscription_id)
    async with services(request).pool.connection() as conn:
        return json_response(Redelivering(await delivery_log.recover(conn, found.id, payload.since)))


async def active_subscription(request: Request, principal: Principal, subscription_id: FromPath[str]) -> WebhookSubscription:
    found = await subscription(request, principal, parse_id(subscription_id))
    if not found.active:
        raise Conflict("the subscription is disabled; re-enable it with PUT {\"active\": true} first")
    return found


ROUTES = [
    list_subscriptions, create_subscription, update_subscription, delete_subscription, list_deliveries,
    retry_delivery, recover_deliveries,
]
