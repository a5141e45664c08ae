"""The credentials an API process has looked up, kept for the hot writes that need no lookup of their own."""

from __future__ import annotations

from projections.views.credentials import Found

KEPT_CREDENTIALS = 10_000


class KnownCredentials:
    """The principals of credentials this process looked up, by kind and secret hash. One is usable
    without a lookup only by a write that the store refuses once a credential was revoked after the
    principal's generation (`with_principal`); a newer generation seen in any lookup retires them all."""

    def __init__(self) -> None:
        self.principals: dict[tuple[str, str], Found] = {}
        self.generation = 0

    def get(self, key: tuple[str, str]) -> Found | None:
        """What the lookup found (its position is that moment's, not to be waited for again)."""
        found = self.principals.get(key)
        usable = (found is not None and found.principal.generation >= self.generation
                  and not found.principal.expired())
        return found if usable else None

    def keep(self, key: tuple[str, str], found: Found) -> None:
        self.generation = max(self.generation, found.principal.generation)
        if len(self.principals) >= KEPT_CREDENTIALS:
            del self.principals[next(iter(self.principals))]
        self.principals[key] = found

    def forget(self, key: tuple[str, str]) -> None:
        """A credential found invalid (revoked) is not kept: its next request is looked up, and counted
        as one without a valid credential."""
        self.principals.pop(key, None)
