"""Attachments as readers see them, and the signed links that serve their bytes.

A message carries its attachments' metadata (`events.types.AttachmentRef`); whoever may read the message is
handed, with it, links to the bytes: absolute, signed (HMAC-SHA256 under a key derived from the secrets
key, so every process of a deployment signs and checks alike) and expiring. A link is only ever made for
a reader the message was shown to, so it needs no credential of its own: an `<img>` in the widget or the
dashboard loads it as it is. The expiry is rounded up to `EXPIRY_STEP`, so the same file keeps the same
link for a while and a browser's cache serves it again."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import uuid
from typing import Any, Callable, Iterable, Literal

import msgspec
import psycopg

from events import types as ev

Variant = Literal["content", "thumbnail"]
EXPIRY_STEP = 600  # seconds
WEBHOOK_LINK_SECONDS = 7 * 24 * 3600  # a webhook's links outlive its retries (28 h by default)


class AttachmentView(msgspec.Struct, rename={"id": "_id", "content_type": "contentType",
                                             "thumbnail_url": "thumbnailUrl"}):
    id: uuid.UUID
    name: str
    content_type: str
    size: int  # bytes
    url: str  # the bytes: absolute, signed, expiring
    thumbnail_url: str | None  # an image's thumbnail (WebP); None for anything else


class UploadedAttachment(msgspec.Struct, rename={"id": "_id", "content_type": "contentType"}):
    """What an upload answers: the id to name in a message's `attachmentIds`."""

    id: uuid.UUID
    name: str
    content_type: str
    size: int


class FileLinks:
    """Signs and checks the links to attachments' bytes. The composition root configures the process's one
    instance (`LINKS`) with the key, the service's external base URL and the links' lifetime."""

    def __init__(self) -> None:
        self.key = b""
        self.base_url: Callable[[], str] = lambda: ""
        self.seconds = 3600

    def configure(self, key: bytes, base_url: Callable[[], str], seconds: int) -> None:
        self.key, self.base_url, self.seconds = key, base_url, seconds

    def signature(self, attachment_id: uuid.UUID, variant: str, expires: int) -> str:
        mac = hmac.new(self.key, f"{attachment_id}/{variant}/{expires}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def url(self, attachment_id: uuid.UUID, variant: Variant, seconds: int | None = None) -> str:
        lifetime = self.seconds if seconds is None else seconds
        expires = -(-(int(time.time()) + lifetime) // EXPIRY_STEP) * EXPIRY_STEP
        return (f"{self.base_url().rstrip('/')}/api/attachments/{attachment_id}/{variant}"
                f"?expires={expires}&signature={self.signature(attachment_id, variant, expires)}")

    def valid(self, attachment_id: uuid.UUID, variant: str, expires: str | None, signature: str | None) -> bool:
        if not expires or not expires.isdigit() or not signature or not self.key:
            return False
        return (int(expires) > time.time()
                and hmac.compare_digest(signature, self.signature(attachment_id, variant, int(expires))))

    def view(self, ref: ev.AttachmentRef, seconds: int | None = None) -> AttachmentView:
        return AttachmentView(ref.attachment_id, ref.name, ref.content_type, ref.size,
                              self.url(ref.attachment_id, "content", seconds),
                              self.url(ref.attachment_id, "thumbnail", seconds) if ref.image else None)


LINKS = FileLinks()


def attachment_views(refs: Iterable[ev.AttachmentRef], seconds: int | None = None) -> list[AttachmentView]:
    return [LINKS.view(ref, seconds) for ref in refs]


def stored_views(stored: list[dict[str, Any]] | None) -> list[AttachmentView]:
    """From a read model's `attachments` column: the event's AttachmentRefs as they were stored."""
    return attachment_views(msgspec.convert(stored or [], list[ev.AttachmentRef]))


async def organization_attachment(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                                  attachment_id: uuid.UUID) -> AttachmentView | None:
    """One of the organization's attachments, notes' included: what the team may open."""
    return await _view(conn, "org_id = %s AND id = %s", (org_id, attachment_id))


async def visitor_attachment(conn: psycopg.AsyncConnection, org_id: uuid.UUID, customer_id: uuid.UUID,
                             attachment_id: uuid.UUID) -> AttachmentView | None:
    """An attachment the visitor may open: one they uploaded, or one on a message of their transcript (never
    an internal note's, never an operator-only conversation's)."""
    return await _view(conn, "org_id = %s AND id = %s AND (customer_id = %s OR EXISTS ("
                             "SELECT 1 FROM rm_attachment_uses u JOIN rm_conversations c ON c.id = u.conversation_id "
                             "WHERE u.attachment_id = a.id AND NOT u.internal AND c.customer_id = %s "
                             "AND NOT c.operator_only))",
                       (org_id, attachment_id, customer_id, customer_id))


async def _view(conn: psycopg.AsyncConnection, where: str, args: tuple) -> AttachmentView | None:
    row = await (await conn.execute(
        f"SELECT id, name, content_type, size, thumbnail IS NOT NULL FROM rm_attachments a WHERE {where}",
        args)).fetchone()
    return LINKS.view(ev.AttachmentRef(*row)) if row else None


async def abandoned(conn: psycopg.AsyncConnection, uploaded_before: Any, limit: int) -> list[tuple]:
    """(org, attachment id, blob, thumbnail) of uploads never attached, uploaded before the time given."""
    return await (await conn.execute(
        "SELECT org_id, id, blob, thumbnail FROM rm_attachments WHERE NOT attached AND uploaded_at < %s "
        "ORDER BY uploaded_at LIMIT %s", (uploaded_before, limit))).fetchall()


async def blob_shared(conn: psycopg.AsyncConnection, key: str, besides: uuid.UUID) -> bool:
    """Whether another attachment holds the same bytes (the store keeps identical files once)."""
    row = await (await conn.execute(
        "SELECT 1 FROM rm_attachments WHERE (blob = %s OR thumbnail = %s) AND id <> %s LIMIT 1",
        (key, key, besides))).fetchone()
    return row is not None
