"""An operator's two-factor sign-in (TOTP, RFC 6238) and an organization's requirement of it: the folds of
their streams, and the pure decisions (enrolling, confirming, removing, whether a presented code passes).

Codes are pyotp's defaults, which are RFC 6238's and what every authenticator app expects: 6 digits, a new
one every 30 seconds, HMAC-SHA-1. A code passes once: the step it belongs to is recorded
(`OperatorTotpCodeUsed`) and no code of that step or an earlier one passes again (RFC 6238 section 5.2)."""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

import pyotp
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from commands.errors import Conflict, Invalid
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

DIGITS = 6
INTERVAL = 30  # seconds a code lasts
# A code of the step before or after the current one passes too: clocks drift and people type slowly.
WINDOW = 1
RECOVERY_CODES = 10
_recovery = PasswordHasher()

# What a sign-in's second factor came to: "passed" (a fresh code, or an unused recovery code), "not-enrolled"
# (the operator has no second factor: the password is enough), "missing" or "wrong".
SecondFactor = Literal["passed", "not-enrolled", "missing", "wrong"]


@dataclass
class TwoFactor(Folded):
    """The operator's stream (its id is the operator's), as far as two-factor sign-in goes."""

    org_id: uuid.UUID  # the organization the operator was created in: its events name it
    email: str
    # the secrets as stored (sealed) until the command that loads the state opens them for the decisions
    pending_secret: str | None = None  # an enrolment not confirmed yet
    secret: str | None = None  # the confirmed one: sign-in asks for its codes
    recovery_hashes: tuple[str, ...] = ()
    used_recovery: frozenset[int] = field(default_factory=frozenset)
    last_step: int = -1  # the latest time step a code passed for

    @property
    def enrolled(self) -> bool:
        return self.secret is not None


def fold_two_factor(history: list[Recorded]) -> TwoFactor:
    created = history[0].event
    assert isinstance(created, ev.OperatorCreated)
    state = TwoFactor(created.operator_id, history[-1].version, created.org_id, created.email)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.OperatorTotpEnrolled):
            state.pending_secret = event.totp_secret
        elif isinstance(event, ev.OperatorTotpConfirmed):
            state.secret, state.pending_secret = state.pending_secret, None
            state.recovery_hashes, state.used_recovery = tuple(event.recovery_code_hashes), frozenset()
        elif isinstance(event, ev.OperatorTotpRemoved):
            state.secret = state.pending_secret = None
            state.recovery_hashes, state.used_recovery = (), frozenset()
        elif isinstance(event, ev.RecoveryCodeUsed):
            state.used_recovery |= {event.index}
        elif isinstance(event, ev.OperatorTotpCodeUsed):
            state.last_step = max(state.last_step, event.step)
    return state


def normalized(code: str) -> str:
    """A code as typed, without the spaces and dashes apps and the recovery list group it with."""
    return "".join(code.split()).replace("-", "").lower()


def recovery_hash(code: str) -> str:
    return _recovery.hash(normalized(code))


def totp_step(secret: str, code: str, at: datetime, after: int = -1) -> int | None:
    """The time step within WINDOW of `at` whose code `code` is, if it is later than `after`; else None."""
    if len(code) != DIGITS or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL)
    for offset in range(-WINDOW, WINDOW + 1):
        moment = at + timedelta(seconds=offset * INTERVAL)
        step = totp.timecode(moment)
        if step > after and hmac.compare_digest(totp.at(moment), code):
            return step
    return None


def _recovery_index(state: TwoFactor, code: str) -> int | None:
    for index, hashed in enumerate(state.recovery_hashes):
        if index in state.used_recovery:
            continue
        try:
            if _recovery.verify(hashed, code):
                return index
        except (VerificationError, InvalidHashError):
            continue
    return None


def _second_factor(state: TwoFactor, code: str | None, at: datetime) -> tuple[SecondFactor, list[ev.Event]]:
    if not state.enrolled:
        return "not-enrolled", []
    code = normalized(code or "")
    if not code:
        return "missing", []
    operator = {"org_id": state.org_id, "at": at, "operator_id": state.stream_id}
    step = totp_step(state.secret, code, at, state.last_step)  # type: ignore[arg-type]
    if step is not None:
        return "passed", [ev.OperatorTotpCodeUsed(**operator, step=step)]
    index = _recovery_index(state, code)
    if index is not None:
        return "passed", [ev.RecoveryCodeUsed(**operator, index=index)]
    return "wrong", []


def decide_second_factor(state: TwoFactor, code: str | None, at: datetime) -> tuple[SecondFactor, list[Pending]]:
    """Whether `code` (a current code, or a recovery code) passes as the operator's second factor, and what
    records that it was used, so that it passes no more."""
    outcome, events = _second_factor(state, code, at)
    return outcome, state.follow(*events)


def decide_enrol(state: TwoFactor, secret: str, at: datetime) -> list[Pending]:
    """A new enrolment (again: a new secret, the former one forgotten) unless one is confirmed already;
    `secret` as it is to be stored (sealed)."""
    if state.enrolled:
        raise Conflict("two-factor sign-in is on already: turn it off first to enrol another device")
    return state.follow(ev.OperatorTotpEnrolled(org_id=state.org_id, at=at, operator_id=state.stream_id,
                                                totp_secret=secret))


def decide_confirm(state: TwoFactor, code: str, recovery_hashes: list[str], at: datetime) -> list[Pending]:
    if state.enrolled:
        raise Conflict("two-factor sign-in is on already")
    if state.pending_secret is None:
        raise Conflict("no enrolment to confirm: start one with POST /api/operators/me/totp")
    if totp_step(state.pending_secret, normalized(code), at) is None:
        raise Invalid("the code does not match: type the current code from your authenticator app "
                      "(and check that the device's clock is right)", "code")
    return state.follow(ev.OperatorTotpConfirmed(org_id=state.org_id, at=at, operator_id=state.stream_id,
                                                 recovery_code_hashes=recovery_hashes))


def decide_remove(state: TwoFactor, code: str, at: datetime) -> list[Pending]:
    """Turns two-factor sign-in off, with a current code or a recovery code; an enrolment not confirmed yet
    ends without one."""
    removed = ev.OperatorTotpRemoved(org_id=state.org_id, at=at, operator_id=state.stream_id)
    if not state.enrolled:
        if state.pending_secret is None:
            raise Conflict("two-factor sign-in is off")
        return state.follow(removed)
    outcome, used = _second_factor(state, code, at)
    if outcome != "passed":
        raise Invalid("the code is wrong or was used already", "code")
    return state.follow(*used, removed)


@dataclass
class Security(Folded):
    """The organization's stream (its id is the organization's), as far as its sign-in rules go."""

    require_two_factor: bool = False


def fold_security(history: list[Recorded]) -> Security:
    created = history[0].event
    assert isinstance(created, ev.OrganizationCreated)
    state = Security(created.org_id, history[-1].version)
    for recorded in history[1:]:
        if isinstance(recorded.event, ev.OrganizationSecurityChanged):
            state.require_two_factor = recorded.event.require_two_factor
    return state


def decide_security(state: Security, require_two_factor: bool, at: datetime) -> list[Pending]:
    if state.require_two_factor == require_two_factor:
        return []
    return state.follow(ev.OrganizationSecurityChanged(org_id=state.stream_id, at=at,
                                                       require_two_factor=require_two_factor))
