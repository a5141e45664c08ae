"""Invitations and password-reset links: single-use links that end by themselves, and the decisions on them
(inviting, revoking, accepting; issuing and using a reset)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from commands.deciders.operator import outranks
from commands.errors import Forbidden, Gone, NotFound
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

LinkState = Literal["pending", "accepted", "revoked"]


@dataclass
class Invitation(Folded):
    invited: ev.OperatorInvited
    state: LinkState = "pending"


def fold_invitation(history: list[Recorded]) -> Invitation:
    invited = history[0].event
    assert isinstance(invited, ev.OperatorInvited)
    state = Invitation(invited.invitation_id, history[-1].version, invited)
    for recorded in history[1:]:
        if isinstance(recorded.event, ev.InvitationAccepted):
            state.state = "accepted"
        elif isinstance(recorded.event, ev.InvitationRevoked):
            state.state = "revoked"
    return state


def check_may_invite(actor_role: str | None, role: str) -> None:
    """An admin invites admins and agents; an owner, owners too."""
    if not outranks(actor_role, "admin"):
        raise Forbidden("your role cannot invite operators")
    if role == "owner" and actor_role != "owner":
        raise Forbidden("only an owner can invite an owner")


def decide_revoke_invitation(invitation: Invitation, actor_role: str | None, at: datetime) -> list[Pending]:
    if invitation.state != "pending":
        raise NotFound("invitation not found (accepted or revoked already)")
    check_may_invite(actor_role, invitation.invited.role)
    return invitation.follow(ev.InvitationRevoked(org_id=invitation.invited.org_id, at=at,
                                                  invitation_id=invitation.stream_id))


def check_usable(state: str, expires_at: datetime, at: datetime, what: str) -> None:
    """A link works once, until it expires: used or revoked, it is unknown (404); expired, gone (410)."""
    if state != "pending":
        raise NotFound(f"{what} not found or used already")
    if expires_at <= at:
        raise Gone(f"this {what} has expired: ask for a new one")


def decide_accept(invitation: Invitation, operator_id: uuid.UUID, at: datetime) -> list[Pending]:
    check_usable(invitation.state, invitation.invited.expires_at, at, "invitation")
    return invitation.follow(ev.InvitationAccepted(org_id=invitation.invited.org_id, at=at,
                                                   invitation_id=invitation.stream_id, operator_id=operator_id))


@dataclass
class PasswordReset(Folded):
    issued: ev.PasswordResetIssued
    used: bool = False


def fold_reset(history: list[Recorded]) -> PasswordReset:
    issued = history[0].event
    assert isinstance(issued, ev.PasswordResetIssued)
    return PasswordReset(issued.reset_id, history[-1].version, issued,
                         any(isinstance(r.event, ev.PasswordResetUsed) for r in history[1:]))


def decide_use_reset(reset: PasswordReset, at: datetime) -> list[Pending]:
    check_usable("accepted" if reset.used else "pending", reset.issued.expires_at, at, "password reset link")
    return reset.follow(ev.PasswordResetUsed(org_id=reset.issued.org_id, at=at, reset_id=reset.stream_id,
                                             operator_id=reset.issued.operator_id))
