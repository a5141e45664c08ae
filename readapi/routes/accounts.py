"""Operators' accounts over HTTP: invitations, passwords and reset links, sessions, and the first owner of a
fresh install.

A link (an invitation, a password reset) is answered as a URL of the dashboard to copy and hand over; the
token rides in the URL's fragment, which browsers do not send to servers. Where e-mail is configured
(PARLEY_SMTP_URL) the same URL is also mailed to its address (`mailed: true`), and a reset asked for by
address is mailed (never answered)."""

from __future__ import annotations

import ipaddress
import secrets
import uuid
from datetime import datetime
from typing import Annotated

import msgspec
from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import accounts
from commands.admin import Created, MAX_EMAIL
from commands.deciders.operator import MAX_DISPLAY_NAME
from commands.errors import Conflict, Forbidden
from events.ids import parse_id
from projections.views.mail import operator as operator_address
from projections.views.operators import OperatorSession, any_operator, invitation_pending, sessions_of
from readapi.auth import ADMIN, OPERATOR_ENROLLING, PUBLIC, Authenticated, Decoded
from readapi.clientaddress import TrustedProxies
from readapi.openapi import describe
from readapi.routes.mail import mail_configured, mail_link
from readapi.routes.team import team_ids
from readapi.services import caught_up, json_response, run_command, services, written

Email = Annotated[str, msgspec.Meta(max_length=MAX_EMAIL)]
Name = Annotated[str, msgspec.Meta(max_length=MAX_DISPLAY_NAME)]
SetupCode = Annotated[str, msgspec.Meta(max_length=100)]


class InvitationCreate(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    role: str


class LinkIssued(msgspec.Struct, rename={"id": "_id", "expires_at": "expiresAt"}):
    """A single-use link, shown once: its token is stored only as a hash. `mailed`: it is also on its way by
    e-mail to the invited address (PARLEY_SMTP_URL is set)."""

    id: uuid.UUID
    url: str
    expires_at: datetime
    mailed: bool = False


class ResetIssued(msgspec.Struct, rename={"expires_at": "expiresAt"}):
    url: str
    expires_at: datetime
    mailed: bool = False  # also on its way by e-mail to the operator's address


class InvitationAccept(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    password: accounts.Password
    display_name: Name | None = None  # a new operator's; one that exists already keeps its own


class SignedIn(msgspec.Struct):
    token: str


class PasswordChange(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    current_password: accounts.Password
    new_password: accounts.Password


class PasswordResetRequest(msgspec.Struct, forbid_unknown_fields=True):
    email: Email


class PasswordResetUse(msgspec.Struct, forbid_unknown_fields=True):
    password: accounts.Password


class PasswordSet(msgspec.Struct, rename="camel"):
    operator_id: uuid.UUID


class SessionEnded(msgspec.Struct, rename={"id": "_id"}):
    id: uuid.UUID
    revoked: bool


class SetupState(msgspec.Struct, rename="camel"):
    """Whether this install still needs its first owner, and whether this client may create it without the
    setup code `parley serve` printed (it is on the server's own machine)."""

    available: bool
    local: bool


class Setup(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    organization_name: Name
    email: Email
    password: accounts.Password
    display_name: Name | None = None
    setup_code: SetupCode | None = None


def link_url(request: Request, page: str, token: str) -> str:
    """The dashboard's page for a link, at the service's public address."""
    base = (services(request).settings.public_url or services(request).base_url).rstrip("/")
    return f"{base}/app/#/{page}/{token}"


def _user_agent(request: Request) -> str | None:
    return request.headers.get("user-agent")


@describe("Invite an operator by e-mail address and role (admins and owners; only an owner invites an owner): "
          "a single-use link, valid 7 days, to copy and hand over. The invitation is listed among the operators, "
          "`status: invited`, until it is accepted", ADMIN, body=InvitationCreate, answer=LinkIssued, status=201,
          errors=(409,), example={"email": "bo@example.com", "role": "agent"}, operation_id="inviteOperator")
@post("/api/operators/invitations", status_code=201)
async def invite(request: Request, principal: Authenticated, payload: Decoded[InvitationCreate]) -> Response:
    async with services(request).pool.connection() as conn:
        if await invitation_pending(conn, principal.org_id, payload.email):
            raise Conflict("this address has an invitation that still works: revoke it first", "email")
    link = await run_command(request, accounts.invite, principal, payload.email, payload.role)
    created = Created(link.id, link.position)
    await written(request, created)
    url = link_url(request, "invite", link.token)
    mailed = await mail_link(request, principal.org_id, link.id, "invitation", payload.email.strip().lower(), url)
    return json_response(LinkIssued(link.id, url, link.expires_at, mailed), created, 201)


@describe("Revoke a pending invitation (admins and owners; an owner's invitation, owners only): its link no "
          "longer works", ADMIN, status=204, operation_id="revokeInvitation")
@delete("/api/operators/invitations/{invitation_id:str}", status_code=204)
async def revoke_invitation(request: Request, principal: Authenticated, invitation_id: FromPath[str]) -> None:
    await written(request, await run_command(request, accounts.revoke_invitation, principal, parse_id(invitation_id)))


@describe("Accept an invitation (the token of its link; no credential): a new operator sets a display name and "
          "a password (at least 10 characters); an address that is an operator's already (of another "
          "organization) gives its password and joins. Signs in to the inviting organization: an operator token. "
          "A link used or revoked answers 404, an expired one 410", PUBLIC, body=InvitationAccept, answer=SignedIn,
          errors=(403, 404, 410), example={"displayName": "Bo", "password": "a long passphrase"},
          operation_id="acceptInvitation")
@post("/api/invitations/{token:str}/accept", status_code=200)
async def accept_invitation(request: Request, token: FromPath[str], payload: Decoded[InvitationAccept]) -> Response:
    secret, created = await run_command(request, accounts.accept_invitation, token, payload.display_name,
                                        payload.password, _user_agent(request))
    await written(request, created)
    return json_response(SignedIn(secret), created)


@describe("Change your password (the current one required; at least 10 characters): every other session of "
          "yours ends, this one stays", OPERATOR_ENROLLING, body=PasswordChange, answer=PasswordSet,
          example={"currentPassword": "correct horse", "newPassword": "a longer passphrase"},
          operation_id="changePassword")
@put("/api/operators/me/password")
async def change_password(request: Request, principal: Authenticated, payload: Decoded[PasswordChange]) -> Response:
    created = await run_command(request, accounts.change_password, principal, payload.current_password,
                                payload.new_password)
    await written(request, created)
    return json_response(PasswordSet(created.id), created)


@describe("Ask for a password reset link by e-mail: always 202, whether or not the address has an account. "
          "The link is mailed to an operator's address where e-mail is configured (PARLEY_SMTP_URL); without it "
          "nothing is sent, and an admin makes one (`POST /api/operators/{operatorId}/password-reset`)", PUBLIC,
          body=PasswordResetRequest, answer=None, status=202, position=False, example={"email": "ada@example.com"},
          operation_id="requestPasswordReset")
@post("/api/password-resets", status_code=202)
async def request_password_reset(request: Request, payload: Decoded[PasswordResetRequest]) -> Response:
    # the answer is the same for every address: whether one has an account is never told
    if mail_configured(request) and (issued := await run_command(request, accounts.request_reset, payload.email)):
        link, org_id, email = issued
        await mail_link(request, org_id, link.id, "password-reset", email, link_url(request, "reset", link.token))
    return Response(b"", status_code=202)


@describe("Make a password reset link for a member of the team, to hand over (admins and owners; an owner's, "
          "owners only): single use, valid 24 hours", ADMIN, answer=ResetIssued, status=201,
          operation_id="issuePasswordReset")
@post("/api/operators/{operator_id:str}/password-reset", status_code=201)
async def issue_password_reset(request: Request, principal: Authenticated, operator_id: FromPath[str]) -> Response:
    member_id = parse_id(operator_id)
    link = await run_command(request, accounts.issue_reset, principal, member_id, await team_ids(request, principal))
    created = Created(link.id, link.position)
    await written(request, created)
    url, mailed = link_url(request, "reset", link.token), False
    async with services(request).pool.connection() as conn:
        member = await operator_address(conn, member_id)
    if member.email:
        mailed = await mail_link(request, principal.org_id, link.id, "password-reset", member.email, url)
    return json_response(ResetIssued(url, link.expires_at, mailed), created, 201)


@describe("Set a new password with a reset link's token (no credential; at least 10 characters): every session "
          "of the operator ends. A link used answers 404, an expired one 410", PUBLIC, body=PasswordResetUse,
          answer=PasswordSet, errors=(404, 410), example={"password": "a long passphrase"},
          operation_id="resetPassword")
@post("/api/password-resets/{token:str}", status_code=200)
async def use_password_reset(request: Request, token: FromPath[str], payload: Decoded[PasswordResetUse]) -> Response:
    created = await run_command(request, accounts.use_reset, token, payload.password)
    await written(request, created)
    return json_response(PasswordSet(created.id), created)


@describe("Your signed-in sessions (access tokens) in every organization: when each signed in, was last used "
          "(to the minute) and from which browser or client; `current` is this one", OPERATOR_ENROLLING,
          answer=list[OperatorSession],
          operation_id="listSessions")
@get("/api/operators/me/sessions")
async def list_sessions(request: Request, principal: Authenticated) -> Response:
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        return json_response(await sessions_of(conn, principal.operator_id, principal.credential_id))


@describe("End one of your sessions (the current one too: that signs you out)", OPERATOR_ENROLLING,
          answer=SessionEnded,
          operation_id="revokeSession")
@delete("/api/operators/me/sessions/{session_id:str}", status_code=200)
async def revoke_session(request: Request, principal: Authenticated, session_id: FromPath[str]) -> Response:
    created = await run_command(request, accounts.revoke_session, principal, parse_id(session_id))
    await written(request, created)
    return json_response(SessionEnded(created.id, True), created)


def _from_this_machine(request: Request) -> bool:
    """Whether the client is on the server's own machine: a loopback address, as PARLEY_TRUSTED_PROXIES lets
    a proxy vouch for the client's address (a request a proxy on this machine forwards is the proxy's)."""
    proxies = TrustedProxies(services(request).settings.trusted_proxies)
    address = proxies.client_address(request.client.host if request.client else None,
                                     request.headers.get("x-forwarded-for"))
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = parsed.ipv4_mapped if isinstance(parsed, ipaddress.IPv6Address) else None
    return (mapped or parsed).is_loopback


async def _setup_available(request: Request) -> bool:
    async with services(request).pool.connection() as conn:
        return not await any_operator(conn)


@describe("Whether this install still needs its first owner (no operator exists), and whether this client may "
          "create it without a setup code", PUBLIC, answer=SetupState, position=False, operation_id="getSetupState")
@get("/api/setup")
async def setup_state(request: Request) -> Response:
    return json_response(SetupState(await _setup_available(request), _from_this_machine(request)))


@describe("Create the first owner of a fresh install, and its organization, signed in: only while no operator "
          "exists (then 409), from the server's own machine or with the one-time setup code `parley serve` "
          "logs at start (else 403). Never an open sign-up", PUBLIC, body=Setup, answer=SignedIn, status=201,
          errors=(403, 409), example={"organizationName": "Acme", "email": "ada@example.com",
                                      "password": "a long passphrase", "displayName": "Ada"},
          operation_id="setUpFirstOwner")
@post("/api/setup", status_code=201)
async def set_up(request: Request, payload: Decoded[Setup]) -> Response:
    if not await _setup_available(request):
        raise Conflict("Parley is set up already: sign in, or ask an owner for an invitation")
    code = services(request).setup_code
    if not _from_this_machine(request) and not (
            code and payload.setup_code and secrets.compare_digest(payload.setup_code.encode(), code.encode())):
        raise Forbidden("from another machine, the first owner needs the setup code `parley serve` printed",
                        "setupCode")
    secret, created = await run_command(request, accounts.set_up_first_owner, payload.organization_name,
                                        payload.email, payload.password, payload.display_name, _user_agent(request))
    await written(request, created)
    return json_response(SignedIn(secret), created, 201)


ROUTES = [invite, revoke_invitation, accept_invitation, change_password, request_password_reset,
          issue_password_reset, use_password_reset, list_sessions, revoke_session, setup_state, set_up]
