"""Who is acting: the credential a request authenticated with, reduced to what commands need."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from dataclasses import dataclass, field
from typing import Literal

from events.types import Actor, Origin

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

    def origin(self, address: str | None, via: str | None = None) -> Origin | None:
        """What the audit log names as the origin of this credential's writes: an operator's token (`cli`
        for the CLI's login token, the only one that ends by itself), an API key, or `via` an MCP client;
        None for a visitor, whose requests are no staff's."""
        if self.kind == "chat":
            return None
        if self.kind == "apikey":
            return Origin("apikey", self.credential_id, self.credential_id, address)
        return Origin(via or ("cli" if self.expires_at is not None else "operator"), self.operator_id,
                      self.credential_id, address)
