"""Two-factor sign-in's decisions, with events folded by hand and a fixed clock: which codes pass (RFC 6238's
test vector, the window of one step either side, each step once), recovery codes used once, enrolment,
confirmation and removal; and that nothing secret is in a public shape."""

from __future__ import annotations

import base64
import uuid
from datetime import datetime, timedelta, timezone

import pyotp
import pytest

from commands.deciders.two_factor import (
    decide_confirm, decide_enrol, decide_remove, decide_second_factor, decide_security, fold_security,
    fold_two_factor, normalized, recovery_hash, totp_step,
)
from commands.errors import Conflict, Invalid
from commands.two_factor import new_recovery_codes, otpauth_uri
from events import public
from events import types as ev
from events.store import Recorded

ORG, OPERATOR = uuid.UUID(int=1), uuid.UUID(int=2)
AT = datetime(2026, 3, 1, 12, 0, 10, tzinfo=timezone.utc)  # 10 s into its 30-second step
SECRET = pyotp.random_base32()
CODES = ["aaaa-bbbb-cccc-dddd", "eeee-ffff-gggg-hhhh"]


def history(*events: ev.Event) -> list[Recorded]:
    created = ev.OperatorCreated(org_id=ORG, at=AT, operator_id=OPERATOR, email="ada@example.com", password_hash="x")
    return [Recorded(0, OPERATOR, version, event) for version, event in enumerate((created, *events), start=1)]


def enrolled(*later: ev.Event) -> list[Recorded]:
    return history(ev.OperatorTotpEnrolled(org_id=ORG, at=AT, operator_id=OPERATOR, totp_secret=SECRET),
                   ev.OperatorTotpConfirmed(org_id=ORG, at=AT, operator_id=OPERATOR,
                                            recovery_code_hashes=[recovery_hash(code) for code in CODES]),
                   *later)


def code(at: datetime, secret: str = SECRET) -> str:
    return pyotp.TOTP(secret).at(at)


def test_rfc_6238_test_vector_sha1():
    """Appendix B of RFC 6238: the ASCII secret "12345678901234567890", T = 59 s, 8 digits: 94287082; the
    6-digit code is its last six."""
    secret = base64.b32encode(b"12345678901234567890").decode()
    at = datetime.fromtimestamp(59, timezone.utc)
    assert totp_step(secret, "287082", at) == 1


def test_a_code_passes_within_one_step_either_side_and_not_beyond():
    assert totp_step(SECRET, code(AT), AT) is not None
    for offset in (-30, 30):
        assert totp_step(SECRET, code(AT + timedelta(seconds=offset)), AT) is not None
    for offset in (-90, 90):
        assert totp_step(SECRET, code(AT + timedelta(seconds=offset)), AT) is None
    assert totp_step(SECRET, "12345", AT) is None and totp_step(SECRET, "abcdef", AT) is None


def test_a_code_passes_once_and_no_earlier_step_after_it():
    state = fold_two_factor(enrolled())
    outcome, pending = decide_second_factor(state, code(AT), AT)
    assert outcome == "passed" and isinstance(pending[0].event, ev.OperatorTotpCodeUsed)
    after = fold_two_factor(enrolled(pending[0].event))
    assert decide_second_factor(after, code(AT), AT)[0] == "wrong"
    assert decide_second_factor(after, code(AT - timedelta(seconds=30)), AT)[0] == "wrong"
    assert decide_second_factor(after, code(AT + timedelta(seconds=30)), AT)[0] == "passed"


def test_missing_wrong_and_not_enrolled():
    state = fold_two_factor(enrolled())
    assert decide_second_factor(state, None, AT) == ("missing", [])
    assert decide_second_factor(state, "  ", AT) == ("missing", [])
    assert decide_second_factor(state, code(AT, pyotp.random_base32()), AT)[0] == "wrong"
    assert decide_second_factor(fold_two_factor(history()), None, AT) == ("not-enrolled", [])
    pending_only = fold_two_factor(history(ev.OperatorTotpEnrolled(org_id=ORG, at=AT, operator_id=OPERATOR,
                                                                   totp_secret=SECRET)))
    assert decide_second_factor(pending_only, None, AT) == ("not-enrolled", [])


def test_a_recovery_code_passes_once_however_it_is_typed():
    state = fold_two_factor(enrolled())
    outcome, pending = decide_second_factor(state, " AAAA bbbb-CCCC dddd ", AT)
    assert outcome == "passed" and pending[0].event == ev.RecoveryCodeUsed(org_id=ORG, at=AT, operator_id=OPERATOR,
                                                                           index=0)
    used = fold_two_factor(enrolled(pending[0].event))
    assert decide_second_factor(used, CODES[0], AT)[0] == "wrong"
    assert decide_second_factor(used, CODES[1], AT)[0] == "passed"


def test_enrol_confirm_and_remove():
    fresh = fold_two_factor(history())
    started = decide_enrol(fresh, SECRET, AT)
    state = fold_two_factor(history(started[0].event))
    assert state.pending_secret == SECRET and not state.enrolled
    with pytest.raises(Invalid):
        decide_confirm(state, code(AT, pyotp.random_base32()), [], AT)
    with pytest.raises(Conflict):
        decide_confirm(fresh, code(AT), [], AT)
    confirmed = decide_confirm(state, code(AT), ["h"], AT)
    assert confirmed[0].version == 3 and confirmed[0].event.recovery_code_hashes == ["h"]
    on = fold_two_factor(enrolled())
    with pytest.raises(Conflict):
        decide_enrol(on, SECRET, AT)
    with pytest.raises(Invalid):
        decide_remove(on, "000000" if code(AT) != "000000" else "111111", AT)
    removal = decide_remove(on, CODES[1], AT)
    assert [type(p.event) for p in removal] == [ev.RecoveryCodeUsed, ev.OperatorTotpRemoved]
    assert [p.version for p in removal] == [4, 5]
    off = fold_two_factor(enrolled(*(p.event for p in removal)))
    assert not off.enrolled and off.recovery_hashes == ()
    with pytest.raises(Conflict):
        decide_remove(off, CODES[0], AT)


def test_the_organization_requirement_changes_only_when_it_differs():
    created = Recorded(0, ORG, 1, ev.OrganizationCreated(org_id=ORG, at=AT, name="Acme"))
    state = fold_security([created])
    assert decide_security(state, False, AT) == []
    turned_on = decide_security(state, True, AT)
    assert turned_on[0].event.require_two_factor is True
    assert fold_security([created, Recorded(0, ORG, 2, turned_on[0].event)]).require_two_factor


def test_recovery_codes_and_the_uri():
    codes = new_recovery_codes()
    assert len(codes) == 10 == len(set(codes))
    assert all(len(normalized(c)) == 16 for c in codes)
    uri = otpauth_uri(SECRET, "ada@example.com")
    parsed = pyotp.parse_uri(uri)
    assert (parsed.secret, parsed.digits, parsed.interval, parsed.issuer) == (SECRET, 6, 30, "Parley")


def test_no_public_shape_holds_the_secret_or_the_recovery_codes():
    for event_type in (ev.OperatorTotpEnrolled, ev.OperatorTotpConfirmed, ev.OperatorTotpRemoved,
                       ev.RecoveryCodeUsed, ev.OperatorTotpCodeUsed, ev.OrganizationSecurityChanged):
        assert event_type in ev.EVENT_TYPES and event_type in public.SHAPES
    assert "totp_secret" not in ev.PUBLIC[ev.OperatorTotpEnrolled]
    assert "recovery_code_hashes" not in ev.PUBLIC[ev.OperatorTotpConfirmed]
    event = enrolled()[1].event
    assert SECRET not in str(public.public_of(event))
