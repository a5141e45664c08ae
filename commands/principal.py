"""Who is acting: the credential a request authenticated with, reduced to what commands need."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from dataclasses import dataclass, field
from typing import Literal, get_args

from events.types import Actor, Origin

# What an operator may do in an organization, one role per membership: `owner` everything, `admin` the
# workspace's settings, keys and team, `agent` the conversations, customers and help documents.
Role = Literal["owner", "admin", "agent"]
# owner ≥ admin ≥ agent: a role may do what the roles below it may
RANK: dict[str, int] = {"agent": 0, "admin": 1, "owner": 2}

Scope = Literal["conversations:read", "customers:read", "customers:write", "documents:read", "events:read",
                "messages:read", "messages:write", "websites:read"]
ALL_SCOPES: frozenset[str] = frozenset(get_args(Scope))


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
    # The operator's role in `org_id`; None for what is no operator (an API key, a visitor's chat session).
    role: Role | None = None
    expires_at: datetime | None = None  # a credential that ends by itself (a `parley login` token)
    # An operator whose organization requires two-factor sign-in and who has none: until they enrol, the
    # token opens only the routes whose Auth says `enrolling` (their profile, the enrolment, sign-out).
    must_enrol: bool = False

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= datetime.now(timezone.utc)

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    def has_role(self, wanted: Role) -> bool:
        """Whether the operator's role is `wanted` or above it."""
        return self.role is not None and RANK[self.role] >= RANK[wanted]

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
