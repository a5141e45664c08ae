"""Two-factor sign-in (TOTP, RFC 6238): an operator enrols, confirms with a code (and receives ten recovery
codes, shown once), turns it off with a code; an organization may require it. `check_second_factor` is
the one check every sign-in runs: the REST sign-in, and the consent page of MCP clients and `parley login`.

The secret stays in the operator's stream, sealed (events/sealing.py) and private (no allow-list shows it; no
read model copies it): the checks load the stream and open it. The recovery codes are kept as argon2 hashes,
as passwords are."""

from __future__ import annotations

import base64
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

import pyotp

from commands.admin import Created
from commands.deciders.two_factor import (
    DIGITS, INTERVAL, RECOVERY_CODES, SecondFactor, TwoFactor, decide_confirm, decide_enrol, decide_remove,
    decide_second_factor, decide_security, fold_security, fold_two_factor, recovery_hash,
)
from commands.errors import Conflict, NotFound
from commands.principal import Principal
from commands.streams import execute, load, now
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, StreamConflict

ISSUER = "Parley"  # what authenticator apps show beside the operator's e-mail address


@dataclass(frozen=True)
class Enrolment:
    secret: str  # base32, as people type it
    uri: str  # otpauth://totp/..., what the QR code holds
    position: int


def _folded(store: EventStore, operator_id: uuid.UUID | None) -> TwoFactor:
    history = store.load(operator_id) if operator_id else []
    if not history or not isinstance(history[0].event, ev.OperatorCreated):
        raise NotFound("operator not found")
    return fold_two_factor(history)


def load_two_factor(store: EventStore, sealer: Sealer, operator_id: uuid.UUID | None) -> TwoFactor:
    """The operator's two-factor state, its secrets opened for the decisions to check codes with."""
    state = _folded(store, operator_id)
    state.secret = state.secret and sealer.open(state.secret)
    state.pending_secret = state.pending_secret and sealer.open(state.pending_secret)
    return state


def otpauth_uri(secret: str, email: str) -> str:
    return pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL).provisioning_uri(name=email, issuer_name=ISSUER)


def enrol(store: EventStore, sealer: Sealer, principal: Principal) -> Enrolment:
    """A new secret for the operator's authenticator app; it counts once `confirm` has a code of it."""
    secret = pyotp.random_base32()
    sealed = sealer.seal(secret)
    appended = execute(store, principal.org_id, lambda: _folded(store, principal.operator_id),
                       lambda state: decide_enrol(state, sealed, now()))
    return Enrolment(secret, otpauth_uri(secret, appended.state.email), appended.position)


def new_recovery_codes() -> list[str]:
    """Ten codes of 80 random bits each, written as four groups of four base32 letters and digits."""
    codes = []
    for _ in range(RECOVERY_CODES):
        text = base64.b32encode(secrets.token_bytes(10)).decode().lower()
        codes.append("-".join(text[i:i + 4] for i in range(0, 16, 4)))
    return codes


def confirm(store: EventStore, sealer: Sealer, principal: Principal, code: str) -> tuple[Created, list[str]]:
    """Turns two-factor sign-in on with a code of the enrolled secret: the recovery codes, in clear this once."""
    codes = new_recovery_codes()
    hashes = [recovery_hash(code) for code in codes]
    appended = execute(store, principal.org_id, lambda: load_two_factor(store, sealer, principal.operator_id),
                       lambda state: decide_confirm(state, code, hashes, now()))
    return Created(principal.operator_id, appended.position), codes  # type: ignore[arg-type]


def remove(store: EventStore, sealer: Sealer, principal: Principal, code: str) -> Created:
    appended = execute(store, principal.org_id, lambda: load_two_factor(store, sealer, principal.operator_id),
                       lambda state: decide_remove(state, code, now()))
    return Created(principal.operator_id, appended.position)  # type: ignore[arg-type]


def check_second_factor(store: EventStore, sealer: Sealer, operator_id: uuid.UUID, code: str | None,
                        at: datetime | None = None) -> SecondFactor:
    """Whether the operator, whose password was right, passes the second factor with `code` (a current code
    or an unused recovery code); a code that passes is recorded as used, so it passes once."""
    at = at or now()
    while True:
        outcome, pending = decide_second_factor(load_two_factor(store, sealer, operator_id), code, at)
        if not pending:
            return outcome
        try:
            store.append(*pending)
            return outcome
        except StreamConflict:
            continue  # another sign-in changed the stream (perhaps used the same code): decide again


def require_two_factor(store: EventStore, principal: Principal, required: bool) -> Created:
    """Whether every operator of the organization needs two-factor sign-in. Only an operator who has it on
    may require it: otherwise their own token would at once open nothing but the enrolment."""
    if required and not _folded(store, principal.operator_id).enrolled:
        raise Conflict("turn on your own two-factor sign-in before requiring it of everyone",
                       "requireTwoFactor")
    appended = execute(store, principal.org_id,
                       lambda: fold_security(load(store, principal.org_id, ev.OrganizationCreated, principal.org_id,
                                                  "organization").history),
                       lambda state: decide_security(state, required, now()))
    return Created(principal.org_id, appended.position)
