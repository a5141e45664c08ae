"""An API key: revoking it (again: nothing new)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded


@dataclass
class ApiKey(Folded):
    created: ev.ApiKeyCreated
    revoked: bool = False


def fold_api_key(history: list[Recorded]) -> ApiKey:
    created = history[0].event
    assert isinstance(created, ev.ApiKeyCreated)
    return ApiKey(created.key_id, history[-1].version, created,
                  revoked=any(isinstance(r.event, ev.ApiKeyRevoked) for r in history))


def decide_revoke(key: ApiKey, at: datetime) -> list[Pending]:
    if key.revoked:
        return []
    return key.follow(ev.ApiKeyRevoked(org_id=key.created.org_id, at=at, key_id=key.created.key_id))
