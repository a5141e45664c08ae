"""Operator sign-in over HTTP: a token for e-mail and password, and revoking the presented token."""

from __future__ import annotations

import asyncio

import msgspec
from litestar import Request, Response, delete, get, post

from commands import admin
from commands.admin import Created
from commands.errors import Unauthorized
from readapi.auth import OPERATOR, PUBLIC, authenticate, operator_only
from readapi.openapi import describe
from readapi.services import caught_up, decode_body, json_response, run_command, services, written


class SignIn(msgspec.Struct, forbid_unknown_fields=True):
    email: str
    password: str


class SignedIn(msgspec.Struct):
    token: str


class SignedOut(msgspec.Struct):
    revoked: bool


class Session(msgspec.Struct, rename="camel"):
    """Who the presented operator token signs in, and the one organization it is bound to."""

    operator_id: str
    email: str
    organization_id: str
    organization_name: str


@describe("Sign in as an operator: an access token for e-mail and password", PUBLIC, body=SignIn,
          answer=SignedIn, errors=(401,), example={"email": "ada@example.com", "password": "correct horse"})
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
    return json_response(SignedIn(token), created)


@describe("Sign out: revoke the presented operator token", OPERATOR, answer=SignedOut)
@delete("/api/operators/sessions/current", status_code=200)
async def sign_out(request: Request) -> Response:
    principal = await authenticate(request, accept=("operator",))
    operator_only(principal)
    position = await run_command(request, admin.revoke_token, principal.org_id, principal.credential_id)
    created = Created(principal.credential_id, position)
    await written(request, created)
    return json_response(SignedOut(True), created)


@describe("The presented operator token: its operator's e-mail and its organization", OPERATOR, answer=Session)
@get("/api/operators/sessions/current")
async def current_session(request: Request) -> Response:
    principal = await authenticate(request, accept=("operator",))
    operator_only(principal)
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        email, name = await (await conn.execute(
            "SELECT o.email, g.name FROM rm_operators o, rm_organizations g WHERE o.id = %s AND g.id = %s",
            (principal.operator_id, principal.org_id))).fetchone()
    return json_response(Session(str(principal.operator_id), email, str(principal.org_id), name))


ROUTES = [sign_in, sign_out, current_session]
