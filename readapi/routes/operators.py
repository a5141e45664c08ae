"""Operator sign-in over HTTP: a token for e-mail and password, and revoking the presented token."""

from __future__ import annotations

import msgspec
from litestar import Request, Response, delete, get, post

from commands import admin
from commands.admin import Created
from commands.errors import Unauthorized
from events import origin
from events.types import Origin
from projections.views.operators import Session, operator_session
from projections.views.sign_in import TooManyFailures, attempt_sign_in
from readapi.auth import OPERATOR, PUBLIC, Authenticated, Decoded, operator_only
from readapi.clientaddress import CLIENT_ADDRESS
from readapi.openapi import describe
from readapi.problems import problem
from readapi.services import caught_up, json_response, run_command, services, written


class SignIn(msgspec.Struct, forbid_unknown_fields=True):
    email: str
    password: str


class SignedIn(msgspec.Struct):
    token: str


class SignedOut(msgspec.Struct):
    revoked: bool


@describe("Sign in as an operator: an access token for e-mail and password", PUBLIC, body=SignIn,
          answer=SignedIn, errors=(401,), example={"email": "ada@example.com", "password": "correct horse"})
@post("/api/operators/sessions", status_code=200)
async def sign_in(request: Request, payload: Decoded[SignIn]) -> Response:
    try:
        found = await attempt_sign_in(services(request).pool, payload.email, payload.password,
                                      services(request).settings.signin_failures_per_account)
    except TooManyFailures as refused:
        return problem(429, str(refused), "email", headers={"Retry-After": str(refused.retry_after)})
    if found is None:
        raise Unauthorized("unknown e-mail address or wrong password")
    origin.acting(Origin("operator", found.id, address=request.scope.get(CLIENT_ADDRESS)))  # for the audit log
    token, position = await run_command(request, admin.issue_token, found.org_id, found.id, None, None,
                                        request.headers.get("user-agent"))
    created = Created(found.id, position)
    await written(request, created)
    return json_response(SignedIn(token), created)


@describe("Sign out: revoke the presented operator token", OPERATOR, answer=SignedOut)
@delete("/api/operators/sessions/current", status_code=200)
async def sign_out(request: Request, principal: Authenticated) -> Response:
    operator_only(principal)
    position = await run_command(request, admin.revoke_token, principal.org_id, principal.credential_id)
    created = Created(principal.credential_id, position)
    await written(request, created)
    return json_response(SignedOut(True), created)


@describe("The presented operator token: its operator's e-mail and its organization", OPERATOR, answer=Session)
@get("/api/operators/sessions/current")
async def current_session(request: Request, principal: Authenticated) -> Response:
    operator_only(principal)
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        return json_response(await operator_session(conn, principal.operator_id, principal.org_id))


ROUTES = [sign_in, sign_out, current_session]
