"""Who is acting: the credential a request authenticated with, reduced to what commands need."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from dataclasses import dataclass, field
from typing import Literal

from events.types import Actor

ALL_SCOPES = frozenset({
    "conversations:read", "customers:read", "customers:write", "documents:read", "events:read",
    "messages:read", "messages:write", "websites:read",
})


@dataclass(frozen=True, slots=True)
class Principal:
    kind: Literal["operator", "apikey", "chat"]
    org_id: uuid.UUID
    credential_id: uuid.UUID
    scopes: frozenset[str] = field(default=ALL_SCOPES)
    website_id: uuid.UUID | None = None  # a pinned key, or the visitor's website
    operator_id: uuid.UUID | None = None
    customer_id: uuid.UUID | None = None  # the visitor of a chat session
    rate_per_minute: int | None = None
    # The credential generation it was looked up at: a write made for it is refused once a revocation
    # has moved the generation on (None: not looked up, as the CLI's own principals).
    generation: int | None = None
    expires_at: datetime | None = None  # a credential that ends by itself (a `parley login` token)
    # An operator whose organization requires two-factor sign-in and who has none: until they enrol, the
    # token opens only the routes whose Auth says `enrolling` (their profile, the enrolment, sign-out).
    must_enrol: bool = False

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= datetime.now(timezone.utc)

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    @property
    def actor(self) -> Actor:
        """Who the audit trail names for a change made with this credential."""
        if self.kind == "chat":
            return Actor("customer", self.customer_id)
        return Actor("operator", self.operator_id) if self.is_operator else Actor("apikey", self.credential_id)
