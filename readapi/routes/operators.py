"""Operator sign-in over HTTP: a token for e-mail and password, and revoking the presented token."""

from __future__ import annotations

import asyncio

import msgspec
from litestar import Request, Response, delete, post

from commands import admin
from commands.admin import Created
from commands.errors import Unauthorized
from readapi.auth import authenticate, operator_only
from readapi.services import decode_body, json_response, run_command, services, written


class SignIn(msgspec.Struct, forbid_unknown_fields=True):
    email: str
    password: str


@post("/api/operators/sessions", status_code=200)
async def sign_in(request: Request) -> Response:
    body = await decode_body(request, SignIn)
    async with services(request).pool.connection() as conn:
        row = await (await conn.execute(
            "SELECT id, org_id, password_hash FROM rm_operators WHERE email = %s",
            (body.email.strip().lower(),))).fetchone()
    matches = row is not None and await asyncio.to_thread(admin.password_matches, row[2], body.password)
    if not matches:
        raise Unauthorized("unknown e-mail address or wrong password")
    token, position = await run_command(request, admin.issue_token, row[1], row[0])
    created = Created(row[0], position)
    await written(request, created)
    return json_response({"token": token}, created)


@delete("/api/operators/sessions/current", status_code=200)
async def sign_out(request: Request) -> Response:
    principal = await authenticate(request, accept=("operator",))
    operator_only(principal)
    position = await run_command(request, admin.revoke_token, principal.org_id, principal.credential_id)
    created = Created(principal.credential_id, position)
    await written(request, created)
    return json_response({"revoked": True}, created)


ROUTES = [sign_in, sign_out]
