"""Operators' accounts: invitations, passwords (changed, or set again by a reset link), sessions, and the first
owner of a fresh install.

A link (an invitation, a password reset) is a random token given once; the store keeps only its hash, as the
value of a private `NameReserved` that names the link's stream, so a link is found without a read model and
used once (its stream's next version is taken by the first use)."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Iterable

import msgspec

from commands.admin import (Created, check_email, hash_password, hash_secret, new_token, password_matches,
                            reserve_name)
from commands.deciders.invitation import (check_may_invite, check_usable, decide_accept, decide_revoke_invitation,
                                          decide_use_reset, fold_invitation, fold_reset)
from commands.deciders.operator import (check_display_name, check_may_manage, check_role, decide_join,
                                        decide_password, fold_operator)
from commands.errors import Conflict, Forbidden, Invalid, NotFound
from commands.principal import Principal
from commands.streams import execute, name_stream, now
from commands.team import load_team
from events import types as ev
from events.ids import new_id
from events.store import EventStore, Pending, StreamConflict

INVITATION_LIFETIME = timedelta(days=7)
RESET_LIFETIME = timedelta(hours=24)
MIN_PASSWORD = 10
MAX_PASSWORD = 1000  # argon2 hashes whatever it is given: a bound keeps a request's cost bounded
SETUP = ("setup", "first-owner")  # the name the first owner's setup reserves: it happens once
Password = Annotated[str, msgspec.Meta(max_length=MAX_PASSWORD)]


@dataclass(frozen=True)
class Link:
    """A single-use link's token, given once: the caller makes the URL of it."""

    id: uuid.UUID
    token: str
    expires_at: datetime
    position: int


def check_new_password(password: str, field: str = "password") -> str:
    if len(password) < MIN_PASSWORD:
        raise Invalid(f"the password needs at least {MIN_PASSWORD} characters", field)
    return password


def _operator_id_by_email(store: EventStore, email: str) -> uuid.UUID | None:
    reservation = store.load(name_stream("operator-email", email))
    return reservation[0].event.owner_id if reservation else None  # type: ignore[union-attr]


def _linked(store: EventStore, kind: str, token: str, what: str) -> list:
    """The stream of the link whose token this is; 404 for a token no link has."""
    reservation = store.load(name_stream(kind, hash_secret(token)))
    if not reservation or not isinstance(reservation[0].event, ev.NameReserved):
        raise NotFound(f"{what} not found or used already")
    return store.load(reservation[0].event.owner_id)


def _new_link(kind: str, prefix: str, org_id: uuid.UUID, link_id: uuid.UUID) -> tuple[str, Pending]:
    token = prefix + secrets.token_urlsafe(32)
    return token, reserve_name(kind, hash_secret(token), org_id, link_id)


def invite(store: EventStore, principal: Principal, email: str, role: str) -> Link:
    """A link that lets `email` join the organization with `role`: the invitee sets a name and a password, or
    gives its own if the address is an operator's already (of another organization)."""
    email = check_email(email)
    check_may_invite(principal.role, check_role(role))
    existing = _operator_id_by_email(store, email)
    if existing and principal.org_id in fold_operator(store.load(existing)).memberships:
        raise Conflict("this e-mail address is an operator of the organization already", "email")
    invitation_id, at = new_id(), now()
    token, reservation = _new_link("invitation", "pi_", principal.org_id, invitation_id)
    expires_at = at + INVITATION_LIFETIME
    position = store.append(reservation, Pending(invitation_id, 1, ev.OperatorInvited(
        org_id=principal.org_id, at=at, invitation_id=invitation_id, email=email, role=role,
        expires_at=expires_at, invited_by=principal.operator_id)))
    return Link(invitation_id, token, expires_at, position)


def revoke_invitation(store: EventStore, principal: Principal, invitation_id: uuid.UUID | None) -> Created:
    history = store.load(invitation_id) if invitation_id else []
    if not history or not isinstance(history[0].event, ev.OperatorInvited) or history[0].event.org_id != principal.org_id:
        raise NotFound("invitation not found")
    appended = execute(store, principal.org_id, lambda: fold_invitation(store.load(invitation_id)),
                       lambda invitation: decide_revoke_invitation(invitation, principal.role, now()))
    return Created(invitation_id, appended.position)


def accept_invitation(store: EventStore, token: str, display_name: str | None, password: str,
                      user_agent: str | None) -> tuple[str, Created]:
    """Joins the invitation's organization and signs in there: a new operator with this name and password, or,
    when the address is an operator's already, that operator (its password checked, its name kept)."""
    invitation = fold_invitation(_linked(store, "invitation", token, "invitation"))
    invited, at = invitation.invited, now()
    check_usable(invitation.state, invited.expires_at, at, "invitation")  # before any password is hashed
    org_id = invited.org_id
    existing = _operator_id_by_email(store, invited.email)
    if existing:
        operator = fold_operator(store.load(existing))
        if not password_matches(operator.password_hash, password):
            raise Forbidden("this e-mail address has an operator account already: give its password", "password")
        operator_id = existing
        joined = decide_join(operator, org_id, check_role(invited.role), at)
    else:
        check_new_password(password)
        operator_id = new_id()
        joined = [reserve_name("operator-email", invited.email, org_id, operator_id),
                  Pending(operator_id, 1, ev.OperatorCreated(
                      org_id=org_id, at=at, operator_id=operator_id, email=invited.email,
                      password_hash=hash_password(password), role=invited.role,
                      display_name=check_display_name(display_name)))]
    secret, issued = new_token(org_id, operator_id, user_agent=user_agent)
    try:
        position = store.append(*decide_accept(invitation, operator_id, at), *joined, issued)
    except StreamConflict:
        raise NotFound("invitation not found or used already") from None
    return secret, Created(operator_id, position)


def change_password(store: EventStore, principal: Principal, current: str, new: str) -> Created:
    """The signed-in operator's password, the current one given; its other sessions end, this one stays."""
    operator_id = principal.operator_id
    assert operator_id is not None, "an operator's credential"
    check_new_password(new, "newPassword")
    operator = fold_operator(store.load(operator_id))
    if not password_matches(operator.password_hash, current):
        raise Forbidden("the current password is wrong", "currentPassword")
    password_hash = hash_password(new)
    appended = execute(store, principal.org_id, lambda: fold_operator(store.load(operator_id)),
                       lambda fresh: decide_password(fresh, principal.org_id, password_hash, now(),
                                                     principal.credential_id))
    return Created(operator_id, appended.position)


def issue_reset(store: EventStore, principal: Principal, operator_id: uuid.UUID | None,
                member_ids: Iterable[uuid.UUID]) -> Link:
    """A link an admin hands to a member of the team: it sets the member's password once (the owner's only
    for an owner)."""
    if operator_id is None:
        raise NotFound("operator not found")
    check_may_manage(load_team(store, principal.org_id, {*member_ids, operator_id}), principal.role, operator_id)
    return _issue_reset(store, principal.org_id, operator_id, principal.operator_id)


def _issue_reset(store: EventStore, org_id: uuid.UUID, operator_id: uuid.UUID, issued_by: uuid.UUID | None) -> Link:
    reset_id, at = new_id(), now()
    token, reservation = _new_link("password-reset", "pr_", org_id, reset_id)
    expires_at = at + RESET_LIFETIME
    position = store.append(reservation, Pending(reset_id, 1, ev.PasswordResetIssued(
        org_id=org_id, at=at, reset_id=reset_id, operator_id=operator_id, expires_at=expires_at,
        issued_by=issued_by)))
    return Link(reset_id, token, expires_at, position)


def request_reset(store: EventStore, email: str) -> tuple[Link, uuid.UUID, str] | None:
    """A reset link an operator asked for by e-mail address (to be mailed to that address, never answered):
    the link, its organization (the operator's first) and the address; None for an address with no account."""
    try:
        email = check_email(email)
    except Invalid:
        return None
    operator_id = _operator_id_by_email(store, email)
    if operator_id is None:
        return None
    org_id = fold_operator(store.load(operator_id)).created.org_id
    return _issue_reset(store, org_id, operator_id, None), org_id, email


def use_reset(store: EventStore, token: str, password: str) -> Created:
    """Sets the operator's password once; every session of the operator ends."""
    reset = fold_reset(_linked(store, "password-reset", token, "password reset link"))
    used = decide_use_reset(reset, now())
    check_new_password(password)
    operator = fold_operator(store.load(reset.issued.operator_id))
    try:
        position = store.append(*used, *decide_password(operator, reset.issued.org_id, hash_password(password),
                                                        now()))
    except StreamConflict:
        raise NotFound("password reset link not found or used already") from None
    return Created(operator.operator_id, position)


def revoke_session(store: EventStore, principal: Principal, session_id: uuid.UUID | None) -> Created:
    """Ends one of the signed-in operator's own sessions (another's reads as missing)."""
    history = store.load(session_id) if session_id else []
    issued = history[0].event if history else None
    if not isinstance(issued, ev.OperatorTokenIssued) or issued.operator_id != principal.operator_id:
        raise NotFound("session not found")
    if any(isinstance(r.event, ev.OperatorTokenRevoked) for r in history):
        return Created(issued.token_id, store.org_position(principal.org_id))
    return Created(issued.token_id, store.append(Pending(issued.token_id, history[-1].version + 1,
                                                         ev.OperatorTokenRevoked(org_id=issued.org_id, at=now(),
                                                                                 token_id=issued.token_id))))


def set_up_first_owner(store: EventStore, organization_name: str, email: str, password: str,
                       display_name: str | None, user_agent: str | None) -> tuple[str, Created]:
    """A fresh install's organization and its owner, signed in; once (the caller checked no operator exists,
    and the setup's reserved name refuses a second one)."""
    if not organization_name.strip():
        raise Invalid("the organization needs a name", "organizationName")
    email, password = check_email(email), check_new_password(password)
    org_id, operator_id, at = new_id(), new_id(), now()
    secret, issued = new_token(org_id, operator_id, user_agent=user_agent)
    try:
        position = store.append(
            reserve_name(*SETUP, org_id, operator_id),
            Pending(org_id, 1, ev.OrganizationCreated(org_id=org_id, at=at, name=organization_name.strip())),
            reserve_name("operator-email", email, org_id, operator_id),
            Pending(operator_id, 1, ev.OperatorCreated(org_id=org_id, at=at, operator_id=operator_id, email=email,
                                                       password_hash=hash_password(password), role="owner",
                                                       display_name=check_display_name(display_name))),
            issued)
    except StreamConflict:
        raise Conflict("Parley is set up already: sign in, or ask an owner for an invitation") from None
    return secret, Created(operator_id, position)
