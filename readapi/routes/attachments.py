"""Attachments: uploads by the team and by visitors, their metadata for whoever may see them, and their bytes
behind signed, expiring links (projections/views/attachments.py). The bytes are served as stored, with the
type the service recognised, `X-Content-Type-Options: nosniff` and a sandboxing Content-Security-Policy; only
an image is shown inline, anything else is a download."""

from __future__ import annotations

from typing import AsyncIterator
from urllib.parse import quote

from litestar import Request, Response, get, post
from litestar.params import FromPath
from litestar.response import Stream

from commands import attachments
from commands.admin import Created
from commands.errors import NotFound
from commands.principal import Principal
from events.ids import parse_id
from events import types as ev
from projections.views.attachments import (LINKS, AttachmentView, UploadedAttachment, organization_attachment,
                                           visitor_attachment)
from readapi.auth import PUBLIC, VISITOR, Auth, Authenticated
from readapi.openapi import file_upload, query, describe
from readapi.services import caught_up, json_response, services
from readapi.uploads import MULTIPART_OVERHEAD, MultipartReader, boundary_of

UPLOAD = file_upload("The file, as the `file` part of a multipart/form-data body. Its type is recognised by its "
                     "content (PNG, JPEG, WebP, PDF, plain text, CSV, zip and office documents; anything else, "
                     "HTML and SVG included, is 415); an image is encoded again without its metadata.")
UPLOAD_DESCRIPTION = ("Name the answer's `_id` in `attachmentIds` of a message within a day; an upload never "
                      "attached is then removed. 413 over the size limit (`PARLEY_ATTACHMENT_MAX_BYTES`), "
                      "refused as soon as the body passes it.")
SERVED_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'; sandbox",
                  "Cross-Origin-Resource-Policy": "cross-origin", "Cache-Control": "private, max-age=600",
                  "Referrer-Policy": "no-referrer"}


async def bounded(stream: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    """The body's chunks, refused (413) once more than `limit` bytes came, whatever Content-Length said."""
    total = 0
    async for chunk in stream:
        total += len(chunk)
        if total > limit:
            raise attachments.too_large(limit - MULTIPART_OVERHEAD)
        yield chunk


async def receive_upload(request: Request, principal: Principal) -> Response:
    svc = services(request)
    settings = svc.attachments
    limit = settings.attachment_max_bytes + MULTIPART_OVERHEAD
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise attachments.too_large(settings.attachment_max_bytes)  # before a byte of the body is read
    reader = MultipartReader(bounded(request.stream(), limit), boundary_of(request.headers.get("content-type")))
    part = await reader.file()
    uploaded = await attachments.upload(svc.store, svc.blobs, settings, principal, part.filename, part.chunks)
    e = uploaded.attachment
    return json_response(UploadedAttachment(e.attachment_id, e.name, e.content_type, e.size),
                         Created(e.attachment_id, uploaded.position), status=201)


@describe("Upload a file to attach to a message", Auth(scope="messages:write"), body=UPLOAD,
          answer=UploadedAttachment, status=201, errors=(413, 415), description=UPLOAD_DESCRIPTION,
          operation_id="uploadAttachment")
@post("/api/attachments", status_code=201, request_max_body_size=None)
async def upload_attachment(request: Request, principal: Authenticated) -> Response:
    return await receive_upload(request, principal)


@describe("Upload a file to attach to the visitor's message", VISITOR, body=UPLOAD, answer=UploadedAttachment,
          status=201, errors=(413, 415), description=UPLOAD_DESCRIPTION, operation_id="uploadChatAttachment")
@post("/api/chat/attachments", status_code=201, request_max_body_size=None)
async def upload_chat_attachment(request: Request, principal: Authenticated) -> Response:
    return await receive_upload(request, principal)


def found(view: AttachmentView | None) -> Response:
    if view is None:
        raise NotFound("attachment not found")
    return json_response(view)


@describe("An attachment of the organization, with fresh links to its bytes", Auth(scope="messages:read"),
          answer=AttachmentView, operation_id="getAttachment")
@get("/api/attachments/{attachment_id:str}")
async def get_attachment(request: Request, principal: Authenticated, attachment_id: FromPath[str]) -> Response:
    await caught_up(request, ("attachments",))
    parsed = parse_id(attachment_id)
    async with services(request).pool.connection() as conn:
        return found(await organization_attachment(conn, principal.org_id, parsed) if parsed else None)


@describe("An attachment of the visitor's transcript (or their own upload), with fresh links to its bytes",
          VISITOR, answer=AttachmentView, operation_id="getChatAttachment",
          description="404 for any other file: another visitor's, an internal note's, an operator-only "
                      "conversation's.")
@get("/api/chat/attachments/{attachment_id:str}")
async def get_chat_attachment(request: Request, principal: Authenticated, attachment_id: FromPath[str]) -> Response:
    await caught_up(request, ("attachments",))
    parsed = parse_id(attachment_id)
    async with services(request).pool.connection() as conn:
        return found(await visitor_attachment(conn, principal.org_id, principal.customer_id, parsed)
                     if parsed else None)


def disposition(kind: str, name: str) -> str:
    ascii_name = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


@describe("An attachment's bytes, or an image's thumbnail, through a signed link", PUBLIC,
          answer="The file's bytes.", media_type="application/octet-stream", tag="attachments",
          query=(query("expires", str, "When the link ends (Unix seconds).", required=True),
                 query("signature", str, "The link's signature.", required=True)),
          description="The links a message's `attachments` carry (`url`, `thumbnailUrl`): no credential, "
                      "since only a reader of the message is given them; 404 once expired or altered. Served "
                      "with the recognised type, `X-Content-Type-Options: nosniff`, a Content-Security-Policy "
                      "that runs nothing, and `Content-Disposition: attachment` for anything not an image.",
          operation_id="downloadAttachment")
@get("/api/attachments/{attachment_id:str}/{variant:str}")
async def attachment_bytes(request: Request, attachment_id: FromPath[str], variant: FromPath[str]) -> Response:
    parsed = parse_id(attachment_id)
    if parsed is None or variant not in ("content", "thumbnail") or not LINKS.valid(
            parsed, variant, request.query_params.get("expires"), request.query_params.get("signature")):
        raise NotFound("no such file, or its link has expired: read the message again for a fresh link")
    svc = services(request)
    # from the upload's event (a cached read), not a read model: the link may be followed the moment the
    # message is posted, before any projection has the upload
    first = await svc.store.first_async(parsed)
    stored = first.event if first is not None else None
    key = (stored.blob if variant == "content" else stored.thumbnail) \
        if isinstance(stored, ev.AttachmentUploaded) else None
    chunks = await svc.blobs.read(key) if key else None
    if chunks is None:
        raise NotFound("the file was removed")
    if variant == "thumbnail":
        media_type, kind = attachments.THUMBNAIL_TYPE, "inline"
    else:
        media_type = stored.content_type
        kind = "inline" if media_type in attachments.IMAGES else "attachment"
    return Stream(chunks, media_type=media_type,
                  headers={**SERVED_HEADERS, "Content-Disposition": disposition(kind, stored.name)})


ROUTES = [upload_attachment, upload_chat_attachment, get_attachment, get_chat_attachment, attachment_bytes]
