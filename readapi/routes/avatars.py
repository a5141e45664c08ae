"""Operators' avatars: each operator uploads or removes their own; anyone may fetch one (the widget shows
it on a visitor's page, cross-origin, as a plain image). What is served is never what was uploaded: an
image the service re-encoded (commands/avatars.py) or initials it drew (projections/views/identities.py)."""

from __future__ import annotations

from litestar import Request, Response, delete, get, put
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.params import FromPath

from commands import avatars
from commands.admin import Created
from commands.errors import NotFound
from events.ids import parse_id
from projections.views.identities import OperatorIdentity, avatar_of, identities
from readapi.auth import OPERATOR, PUBLIC, Authenticated
from readapi.openapi import RawBody, describe
from readapi.problems import problem
from readapi.services import json_response, run_command, services, written

IMAGE = RawBody(avatars.MEDIA_TYPES, f"The image itself (PNG, JPEG or WebP), at most {avatars.MAX_UPLOAD_BYTES} "
                                     f"bytes; it is cropped to a square and resized to {avatars.SIZE} pixels.")
# An avatar is only ever an image to show: opened on its own it runs nothing, loads nothing, and any
# page may embed it (the widget's, on the integrator's site).
SERVED_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'; sandbox",
                  "Cross-Origin-Resource-Policy": "cross-origin"}
IMMUTABLE = "public, max-age=31536000, immutable"  # the URL names the version
REVALIDATE = "public, max-age=300"


async def my_identity(request: Request, created: Created) -> Response:
    await written(request, created)
    async with services(request).pool.connection() as conn:
        found = await identities(conn, [created.id])
    return json_response(found[created.id], created)


@describe("Upload your avatar", OPERATOR, operation_id="setMyAvatar", body=IMAGE, answer=OperatorIdentity, errors=(413, 415),
          description="The image is recognised by its first bytes (a PNG, JPEG or WebP file; anything else is 415), "
                      "turned upright, cropped to a square, resized and encoded again as WebP from its pixels "
                      "alone: none of the file's metadata (EXIF, GPS position, comments) is kept. Visitors see it "
                      "beside your replies.")
@put("/api/operators/me/avatar", status_code=200, request_max_body_size=avatars.MAX_UPLOAD_BYTES)
async def upload_avatar(request: Request, principal: Authenticated) -> Response:
    try:
        data = await request.body()
    except RequestEntityTooLarge:
        return problem(413, f"the image is larger than {avatars.MAX_UPLOAD_BYTES} bytes", title="Content Too Large")
    created = await run_command(request, avatars.set_avatar, principal, data)
    return await my_identity(request, created)


@describe("Remove your avatar (your initials are shown again)", OPERATOR, operation_id="removeMyAvatar", answer=OperatorIdentity)
@delete("/api/operators/me/avatar", status_code=200)
async def remove_avatar(request: Request, principal: Authenticated) -> Response:
    created = await run_command(request, avatars.remove_avatar, principal)
    return await my_identity(request, created)


@describe("An operator's avatar", PUBLIC, operation_id="getOperatorAvatar", answer="The image: WebP for an uploaded avatar, SVG for initials.",
          media_type="image/*", tag="operators",
          description="No credential: the widget shows it beside the team's replies. The URL a message's "
                      "`operator.avatarUrl` gives names the version (`v`), and its answer may be cached for good; "
                      "without it, for five minutes. Served with `X-Content-Type-Options: nosniff` and a "
                      "Content-Security-Policy that runs nothing.")
@get("/api/operators/{operator_id:str}/avatar")
async def get_avatar(request: Request, operator_id: FromPath[str]) -> Response:
    parsed = parse_id(operator_id)
    async with services(request).pool.connection() as conn:
        avatar = await avatar_of(conn, parsed) if parsed is not None else None
    if avatar is None:
        raise NotFound("operator not found")
    etag = f'"{avatar.version}"'
    current = request.query_params.get("v") == avatar.version
    headers = {**SERVED_HEADERS, "ETag": etag, "Cache-Control": IMMUTABLE if current else REVALIDATE}
    if request.headers.get("if-none-match") == etag:
        return Response(b"", status_code=304, headers=headers)
    return Response(avatar.body, media_type=avatar.media_type, headers=headers)


ROUTES = [upload_avatar, remove_avatar, get_avatar]
