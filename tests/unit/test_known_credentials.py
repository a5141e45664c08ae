"""A principal kept for hot writes (no lookup of their own) is not used past its credential's end: the
next write looks the credential up, and an expired `parley login` token is then refused."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from commands.principal import Principal
from projections.views.credentials import Found
from readapi.credentials import KnownCredentials


def _operator(expires_at: datetime | None) -> Principal:
    return Principal("operator", uuid.uuid4(), uuid.uuid4(), operator_id=uuid.uuid4(), generation=1,
                     expires_at=expires_at)


def test_a_kept_principal_is_not_used_past_its_credentials_end():
    known, now = KnownCredentials(), datetime.now(timezone.utc)
    lasting, ending, ended = _operator(None), _operator(now + timedelta(days=30)), _operator(now - timedelta(seconds=1))
    for name, principal in (("lasting", lasting), ("ending", ending), ("ended", ended)):
        known.keep(("operator", name), Found(principal, 0))
    assert known.get(("operator", "lasting")).principal is lasting
    assert known.get(("operator", "ending")).principal is ending
    assert known.get(("operator", "ended")) is None
