"""Two-factor sign-in over HTTP: the operator's own enrolment (the secret, its QR code drawn here as SVG,
confirmation with a code, ten recovery codes shown once), turning it off with a code, and the organization's
requirement. The secret and the recovery codes are in the answer that makes them, and never again."""

from __future__ import annotations

import io
from typing import Annotated

import msgspec
import segno
from litestar import Request, Response, delete, get, post, put

from commands import two_factor
from commands.admin import Created
from commands.principal import Principal
from projections.views.two_factor import TwoFactorStatus, two_factor_status
from readapi.auth import OPERATOR, OPERATOR_ENROLLING, OWNER, Authenticated, Decoded, operator_only
from readapi.openapi import describe
from readapi.services import caught_up, json_response, run_command, services, written

Code = Annotated[str, msgspec.Meta(min_length=1, max_length=64, description=(
    "A current 6-digit code from the authenticator app, or (to sign in or turn it off) an unused recovery code"))]


class Enrolment(msgspec.Struct, rename="camel"):
    secret: Annotated[str, msgspec.Meta(description="base32, for typing into an authenticator app")]
    otpauth_uri: Annotated[str, msgspec.Meta(description="otpauth://totp/... (RFC 6238: SHA-1, 6 digits, 30 s)")]
    qr_svg: Annotated[str, msgspec.Meta(description="the otpauth URI as a QR code, an SVG document")]


class CodeBody(msgspec.Struct, forbid_unknown_fields=True):
    code: Code


class RecoveryCodes(msgspec.Struct, rename="camel"):
    recovery_codes: Annotated[list[str], msgspec.Meta(description="ten codes, each usable once; shown only now")]


class Security(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    require_two_factor: bool


def qr_svg(uri: str) -> str:
    """The QR code of `uri` as a standalone SVG document (drawn here: the secret goes to no other service)."""
    out = io.BytesIO()
    segno.make(uri, error="m", micro=False).save(out, kind="svg", scale=4, xmldecl=False,
                                                 title="QR code for your authenticator app")
    return out.getvalue().decode()


async def status_response(request: Request, principal: Principal, created: Created | None = None) -> Response:
    if created is None:
        await caught_up(request)
    else:
        await written(request, created)
    async with services(request).pool.connection() as conn:
        return json_response(await two_factor_status(conn, principal.operator_id, principal.org_id), created)


@describe("Whether the operator has two-factor sign-in on, and whether the organization requires it",
          OPERATOR_ENROLLING, answer=TwoFactorStatus,
          operation_id="getTwoFactorStatus")
@get("/api/operators/me/totp")
async def totp_status(request: Request, principal: Authenticated) -> Response:
    operator_only(principal)
    return await status_response(request, principal)


@describe("Start enrolling in two-factor sign-in: a new secret, as text, otpauth URI and QR code (SVG); it counts "
          "once confirmed with a code", OPERATOR_ENROLLING, answer=Enrolment, errors=(409,),
          operation_id="startTwoFactorEnrolment")
@post("/api/operators/me/totp", status_code=200)
async def start_enrolment(request: Request, principal: Authenticated) -> Response:
    operator_only(principal)
    enrolment = await run_command(request, two_factor.enrol, services(request).sealer, principal)
    return json_response(Enrolment(enrolment.secret, enrolment.uri, qr_svg(enrolment.uri)),
                         Created(principal.operator_id, enrolment.position))


@describe("Confirm the enrolment with a current code: two-factor sign-in is on, and the answer alone carries "
          "the ten recovery codes", OPERATOR_ENROLLING, body=CodeBody, answer=RecoveryCodes, errors=(409,),
          example={"code": "492039"},
          operation_id="confirmTwoFactorEnrolment")
@post("/api/operators/me/totp/confirm", status_code=200)
async def confirm_enrolment(request: Request, principal: Authenticated, payload: Decoded[CodeBody]) -> Response:
    operator_only(principal)
    created, codes = await run_command(request, two_factor.confirm, services(request).sealer, principal, payload.code)
    await written(request, created)  # the next request's token is no longer limited to enrolling
    return json_response(RecoveryCodes(codes), created)


@describe("Turn two-factor sign-in off, with a current code or a recovery code", OPERATOR, body=CodeBody,
          answer=TwoFactorStatus, errors=(409,), example={"code": "492039"},
          operation_id="removeTwoFactor")
@delete("/api/operators/me/totp", status_code=200)
async def remove_totp(request: Request, principal: Authenticated, payload: Decoded[CodeBody]) -> Response:
    operator_only(principal)
    created = await run_command(request, two_factor.remove, services(request).sealer, principal, payload.code)
    return await status_response(request, principal, created)


@describe("Whether every operator of the organization must sign in with two factors; those without are sent "
          "to enrol (owners; only one who has it on may require it: 409)", OWNER, body=Security, answer=Security,
          errors=(409,), example={"requireTwoFactor": True},
          operation_id="updateOrganizationSecurity")
@put("/api/organization/security", status_code=200)
async def set_security(request: Request, principal: Authenticated, payload: Decoded[Security]) -> Response:
    created = await run_command(request, two_factor.require_two_factor, principal, payload.require_two_factor)
    await written(request, created)
    return json_response(Security(payload.require_two_factor), created)


ROUTES = [totp_status, start_enrolment, confirm_enrolment, remove_totp, set_security]
