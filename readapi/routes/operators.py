"""Operator sign-in over HTTP: a token for e-mail and password, and revoking the presented token."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Request, Response, delete, get, post

from commands import admin, two_factor
from commands.admin import Created
from commands.errors import TwoFactorRequired, Unauthorized
from events import origin
from events.types import Origin
from projections.views.operators import Session, operator_session
from projections.views.sign_in import TooManyFailures, attempt_sign_in, signed_in
from readapi.auth import OPERATOR_ENROLLING, PUBLIC, Authenticated, Decoded, operator_only
from readapi.clientaddress import CLIENT_ADDRESS
from readapi.openapi import describe
from readapi.problems import problem
from readapi.services import caught_up, json_response, run_command, services, written


class SignIn(msgspec.Struct, forbid_unknown_fields=True):
    email: str
    password: str
    # the second factor of an operator who turned it on: a current code, or an unused recovery code
    totp: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class SignedIn(msgspec.Struct):
    token: str


class SignedOut(msgspec.Struct):
    revoked: bool


@describe("Sign in as an operator: an access token for e-mail and password (and `totp`, a current code or a "
          "recovery code, for an operator with two-factor sign-in: without it, or with a wrong one, 401 "
          "two-factor-required)", PUBLIC, body=SignIn,
          answer=SignedIn, errors=(401,), example={"email": "ada@example.com", "password": "correct horse"},
          operation_id="signIn")
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
    second_factor = await run_command(request, two_factor.check_second_factor, services(request).sealer, found.id,
                                      payload.totp)
    if second_factor == "missing":
        raise TwoFactorRequired("two-factor sign-in is on: send `totp`, a current code from the authenticator "
                                "app or a recovery code", "totp")
    if second_factor == "wrong":
        raise TwoFactorRequired("the two-factor code is wrong or was used already", "totp")
    await signed_in(services(request).pool, found.id)
    token, position = await run_command(request, admin.issue_token, found.org_id, found.id, None, None,
                                        request.headers.get("user-agent"))
    created = Created(found.id, position)
    await written(request, created)
    return json_response(SignedIn(token), created)


@describe("Sign out: revoke the presented operator token", OPERATOR_ENROLLING, answer=SignedOut,
          operation_id="signOut")
@delete("/api/operators/sessions/current", status_code=200)
async def sign_out(request: Request, principal: Authenticated) -> Response:
    operator_only(principal)
    position = await run_command(request, admin.revoke_token, principal.org_id, principal.credential_id)
    created = Created(principal.credential_id, position)
    await written(request, created)
    return json_response(SignedOut(True), created)


@describe("The presented operator token: its operator's e-mail and its organization", OPERATOR_ENROLLING,
          answer=Session,
          operation_id="getCurrentSession")
@get("/api/operators/sessions/current")
async def current_session(request: Request, principal: Authenticated) -> Response:
    operator_only(principal)
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        return json_response(await operator_session(conn, principal.operator_id, principal.org_id))


ROUTES = [sign_in, sign_out, current_session]
