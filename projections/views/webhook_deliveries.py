"""The delivery log: every delivery of a subscription with each of its attempts (the webhooks read model's
delivery table, which the dispatcher works through), and the redelivery that puts deliveries back in its queue."""

from __future__ import annotations

import base64
import binascii
import uuid
from datetime import datetime
from typing import Annotated, Mapping

import msgspec
import psycopg

from commands.errors import Invalid
from projections.webhooks import WAKE_CHANNEL
from projections.views.collections import parse_int

PAGE_DEFAULT, PAGE_MAX = 100, 500
STATUSES = ("pending", "succeeded", "failed", "stopped")


class DeliveryAttempt(msgspec.Struct, rename={"response_status": "responseStatus", "latency_ms": "latencyMs",
                                              "response_body": "responseBody", "next_retry_at": "nextRetryTime"}):
    at: datetime
    response_status: int | None
    latency_ms: int
    error: str | None
    response_body: str | None  # truncated
    next_retry_at: datetime | None


class WebhookDelivery(msgspec.Struct, rename={"id": "_id", "subscription_id": "subscriptionId",
                                              "next_attempt_at": "nextRetryTime", "created_at": "createdAt",
                                              "updated_at": "updatedAt"}):
    id: uuid.UUID
    subscription_id: uuid.UUID
    event: str
    position: int
    status: str
    next_attempt_at: datetime | None
    created_at: datetime
    updated_at: datetime
    attempts: list[DeliveryAttempt] = []


class DeliveryPage(msgspec.Struct, rename={"next_cursor": "nextCursor"}):
    items: list[WebhookDelivery]
    next_cursor: str | None


class Recover(msgspec.Struct, forbid_unknown_fields=True):
    since: Annotated[datetime, msgspec.Meta(tz=True)]


DELIVERY_COLUMNS = "id, subscription_id, event, position, status, next_attempt_at, created_at, updated_at"


def encode_cursor(delivery_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(delivery_id.bytes).decode().rstrip("=")


def decode_cursor(cursor: str) -> uuid.UUID:
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        raise Invalid("cursor is not a nextCursor of this list", "cursor") from None


async def deliveries_page(conn: psycopg.AsyncConnection, subscription_id: uuid.UUID,
                          params: Mapping[str, str]) -> DeliveryPage:
    """Deliveries by ascending `_id` (creation order), `limit` per page (default 100, at most 500)."""
    limit = parse_int(params, "limit", PAGE_DEFAULT) or PAGE_DEFAULT
    if limit > PAGE_MAX:
        raise Invalid(f"limit must be at most {PAGE_MAX}", "limit")
    where, args = ["subscription_id = %s"], [subscription_id]
    if cursor := params.get("cursor"):
        where.append("id > %s")
        args.append(decode_cursor(cursor))
    if status := params.get("status"):
        if status not in STATUSES:
            raise Invalid(f"status must be one of {', '.join(STATUSES)}", "status")
        where.append("status = %s")
        args.append(status)
    rows = await (await conn.execute(
        f"SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE {' AND '.join(where)} ORDER BY id LIMIT %s",
        [*args, limit + 1])).fetchall()
    items = [WebhookDelivery(*row) for row in rows[:limit]]
    attempts: dict[uuid.UUID, list[DeliveryAttempt]] = {item.id: item.attempts for item in items}
    for delivery_id, *attempt in await (await conn.execute(
            "SELECT delivery_id, at, response_status, latency_ms, error, response_body, next_retry_at "
            "FROM webhook_attempts WHERE delivery_id = ANY(%s) ORDER BY id", ([item.id for item in items],))).fetchall():
        attempts[delivery_id].append(DeliveryAttempt(*attempt))
    return DeliveryPage(items, encode_cursor(items[-1].id) if len(rows) > limit else None)


REDELIVER = ("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), retry_since = now(), "
             "updated_at = now() WHERE subscription_id = %s")


async def redeliver(conn: psycopg.AsyncConnection, subscription_id: uuid.UUID, delivery_id: uuid.UUID | None) -> bool:
    """Makes one delivery due now, whatever its state; False when the subscription has no such delivery."""
    async with conn.transaction():
        cur = await conn.execute(REDELIVER + " AND id = %s", (subscription_id, delivery_id))
        await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))
    return cur.rowcount == 1


async def recover(conn: psycopg.AsyncConnection, subscription_id: uuid.UUID, since: datetime) -> int:
    """Makes every failed or stopped delivery created since `since` due now; returns how many."""
    async with conn.transaction():
        cur = await conn.execute(REDELIVER + " AND status IN ('failed', 'stopped') AND created_at >= %s",
                                 (subscription_id, since))
        await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))
    return cur.rowcount


async def delivery(conn: psycopg.AsyncConnection, subscription_id: uuid.UUID, delivery_id: uuid.UUID) -> WebhookDelivery:
    row = await (await conn.execute(
        f"SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE subscription_id = %s AND id = %s",
        (subscription_id, delivery_id))).fetchone()
    return WebhookDelivery(*row)
