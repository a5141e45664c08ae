"""Organizations, websites, operators and their credentials (the `parley admin` commands and sign-in)."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from commands.deciders.api_key import ApiKey, decide_revoke, fold_api_key
from commands.deciders.operator import check_display_name, check_role, decide_join, fold_operator
from commands.errors import Conflict, Invalid, NotFound
from commands.principal import ALL_SCOPES
from commands.streams import execute, load, name_stream, now
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending, StreamConflict
from events.ids import new_id

VANITY = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# RFC 5321's limit; the read models index e-mails, and PostgreSQL cannot index one of a few thousand
# characters: the store would take it and every read model would stop at it.
MAX_EMAIL = 254
MAX_USER_AGENT = 300  # what a session keeps of its client's User-Agent
MAX_RATE = 1_000_000_000  # a key's requests per minute; the read model keeps it as a 32-bit integer
HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
# A website's brand color until it is given one: the widget's, the mascot's and the dashboard's default alike
DEFAULT_BRAND_COLOR = "#4f46e5"
_passwords = PasswordHasher()


def hash_secret(secret: str) -> str:
    """Credentials are random and long, so a fast hash is enough to keep them unrecoverable at rest."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Created:
    id: uuid.UUID
    position: int
    event: ev.Event | None = None  # the event that created the record, when the caller can answer from it


def create_org(store: EventStore, name: str) -> Created:
    if not name.strip():
        raise Invalid("name must not be empty", "name")
    org_id = new_id()
    position = store.append(Pending(org_id, 1, ev.OrganizationCreated(org_id=org_id, at=now(), name=name.strip())))
    return Created(org_id, position)


def reserve_name(kind: str, value: str, org_id: uuid.UUID, owner: uuid.UUID) -> Pending:
    """Claims a unique name for `owner` (a second claim of it conflicts in the store)."""
    return Pending(name_stream(kind, value), 1,
                   ev.NameReserved(org_id=org_id, at=now(), kind=kind, value=value, owner_id=owner))


def check_brand_color(brand_color: str | None) -> None:
    if brand_color is not None and not HEX_COLOR.match(brand_color):
        raise Invalid("brand color must look like #1a2b3c", "brandColor")


def new_identity_secret() -> str:
    return secrets.token_hex(32)


def create_website(store: EventStore, sealer: Sealer, org_id: uuid.UUID, name: str, brand_color: str | None,
                   name_field: str = "name") -> tuple[Created, str]:
    """The new website and its identity secret, in the clear for its creator; the event holds it sealed."""
    load(store, org_id, ev.OrganizationCreated, org_id, "organization")
    if not VANITY.match(name):
        raise Invalid("the vanity id is 2-63 characters of a-z, 0-9 and '-'", name_field)
    check_brand_color(brand_color)
    brand_color = brand_color or DEFAULT_BRAND_COLOR
    website_id = new_id()
    identity_secret = new_identity_secret()
    try:
        position = store.append(
            reserve_name("website", name, org_id, website_id),
            Pending(website_id, 1, ev.WebsiteCreated(org_id=org_id, at=now(), website_id=website_id, name=name,
                                                     brand_color=brand_color, identity_secret=sealer.seal(identity_secret))),
        )
    except StreamConflict:
        raise Conflict(f"the vanity id {name!r} is taken", name_field) from None
    return Created(website_id, position), identity_secret


def check_email(email: str) -> str:
    """The address as stored: trimmed, lower case."""
    email = email.strip().lower()
    if len(email) > MAX_EMAIL or not EMAIL.match(email):
        raise Invalid(f"not an e-mail address of at most {MAX_EMAIL} characters", "email")
    return email


def create_operator(store: EventStore, org_id: uuid.UUID, email: str, password: str, role: str = "owner",
                    display_name: str | None = None) -> tuple[Created, str]:
    load(store, org_id, ev.OrganizationCreated, org_id, "organization")
    email = check_email(email)
    if len(password) < 8:
        raise Invalid("the password needs at least 8 characters", "password")
    created_role = check_role(role)
    display_name = check_display_name(display_name)
    operator_id = new_id()
    try:
        store.append(
            reserve_name("operator-email", email, org_id, operator_id),
            Pending(operator_id, 1, ev.OperatorCreated(org_id=org_id, at=now(), operator_id=operator_id, email=email,
                                                       password_hash=_passwords.hash(password), role=created_role,
                                                       display_name=display_name)),
        )
    except StreamConflict:
        raise Conflict("an operator with this e-mail address exists", "email") from None
    token, position = issue_token(store, org_id, operator_id)
    return Created(operator_id, position), token


def new_token(org_id: uuid.UUID, operator_id: uuid.UUID, token_id: uuid.UUID | None = None,
              expires_at: datetime | None = None, user_agent: str | None = None) -> tuple[str, Pending]:
    """An operator access token and the event that issues it, to append with others or alone."""
    token = "pt_" + secrets.token_urlsafe(32)
    token_id = token_id or new_id()
    return token, Pending(token_id, 1, ev.OperatorTokenIssued(
        org_id=org_id, at=now(), token_id=token_id, operator_id=operator_id, token_hash=hash_secret(token),
        expires_at=expires_at, user_agent=user_agent[:MAX_USER_AGENT] if user_agent else None))


def issue_token(store: EventStore, org_id: uuid.UUID, operator_id: uuid.UUID,
                token_id: uuid.UUID | None = None, expires_at: datetime | None = None,
                user_agent: str | None = None) -> tuple[str, int]:
    token, pending = new_token(org_id, operator_id, token_id, expires_at, user_agent)
    return token, store.append(pending)


def hash_password(password: str) -> str:
    return _passwords.hash(password)


# What a sign-in for an address no operator has is checked against: the hash of a random password nobody
# kept, made with the same parameters as operators' hashes, so that the answer takes as long as for an
# operator's address and its timing does not tell which addresses are operators'.
UNKNOWN_OPERATOR_HASH = "$argon2id$v=19$m=65536,t=3,p=4$Iv/T+RTeg0rBrjkuqkM0mw$jB3r9etGzI+oqTwFvhEX64MMBrs9kp3cw3tcwzFtlmo"


def password_matches(password_hash: str | None, password: str) -> bool:
    """Whether `password` is the one hashed; `None` (no such operator) costs the same check and never matches."""
    try:
        verified = _passwords.verify(password_hash or UNKNOWN_OPERATOR_HASH, password)
    except (VerificationError, InvalidHashError):
        return False
    return verified and password_hash is not None


def revoke_token(store: EventStore, org_id: uuid.UUID, token_id: uuid.UUID) -> int:
    token = load(store, token_id, ev.OperatorTokenIssued, org_id, "token")
    return store.append(Pending(token_id, token.version + 1,
                                ev.OperatorTokenRevoked(org_id=org_id, at=now(), token_id=token_id)))


def operator_by_email(store: EventStore, email: str) -> tuple[uuid.UUID, list]:
    """The operator holding this e-mail address (its reservation names it), and its stream."""
    reservation = store.load(name_stream("operator-email", email.strip().lower()))
    if not reservation or not isinstance(reservation[0].event, ev.NameReserved):
        raise NotFound("no operator has this e-mail address", "email")
    operator_id = reservation[0].event.owner_id
    return operator_id, store.load(operator_id)


def add_operator_org(store: EventStore, email: str, org_id: uuid.UUID, role: str = "owner") -> Created:
    """The operator also belongs to `org_id`, with `role`; it keeps signing in as before (to the organization
    it was created in), and the MCP consent page offers every organization it belongs to."""
    load(store, org_id, ev.OrganizationCreated, org_id, "organization")
    joined_role = check_role(role)
    operator_id, _ = operator_by_email(store, email)
    appended = execute(store, org_id, lambda: fold_operator(store.load(operator_id)),
                       lambda operator: decide_join(operator, org_id, joined_role, now()))
    return Created(operator_id, appended.position)


def remove_operator_org(store: EventStore, email: str, org_id: uuid.UUID) -> Created:
    """Ends a membership added with `add_operator_org` (and so every MCP connection bound to it)."""
    operator_id, history = operator_by_email(store, email)
    if history[0].event.org_id == org_id:
        raise Invalid("an operator cannot leave the organization it was created in", "org")
    if org_id not in fold_operator(history).memberships:
        raise NotFound("the operator is not a member of this organization", "org")
    return Created(operator_id, store.append(Pending(operator_id, history[-1].version + 1, ev.OperatorOrgRemoved(
        org_id=org_id, at=now(), operator_id=operator_id))))


def revoke_operator_sessions(store: EventStore, email: str) -> Created:
    """Ends every session of the operator: its access tokens and its MCP connections, in every organization."""
    operator_id, history = operator_by_email(store, email)
    return Created(operator_id, store.append(Pending(operator_id, history[-1].version + 1, ev.OperatorSessionsRevoked(
        org_id=history[0].event.org_id, at=now(), operator_id=operator_id))))


def create_api_key(store: EventStore, org_id: uuid.UUID, scopes: list[str], website_id: uuid.UUID | None,
                   rate_per_minute: int | None, name: str | None = None) -> tuple[Created, str]:
    load(store, org_id, ev.OrganizationCreated, org_id, "organization")
    unknown = sorted(set(scopes) - ALL_SCOPES)
    if unknown or not scopes:
        raise Invalid(f"unknown scopes {unknown}; known: {sorted(ALL_SCOPES)}", "scopes")
    if website_id is not None:
        load(store, website_id, ev.WebsiteCreated, org_id, "website")
    if rate_per_minute is not None and not 1 <= rate_per_minute <= MAX_RATE:
        raise Invalid(f"the rate must be 1 to {MAX_RATE:,} requests per minute", "ratePerMinute")
    key_id = new_id()
    secret = "pk_" + secrets.token_urlsafe(32)
    position = store.append(Pending(key_id, 1, ev.ApiKeyCreated(
        org_id=org_id, at=now(), key_id=key_id, secret_hash=hash_secret(secret), scopes=sorted(set(scopes)),
        website_id=website_id, rate_per_minute=rate_per_minute, name=name)))
    return Created(key_id, position), secret


def load_api_key(store: EventStore, key_id: uuid.UUID | None, org_id: uuid.UUID | None) -> ApiKey:
    """With `org_id`, another organization's key reads as missing."""
    history = store.load(key_id) if key_id else []
    if (not history or not isinstance(history[0].event, ev.ApiKeyCreated)
            or org_id not in (None, history[0].event.org_id)):
        raise NotFound("API key not found", "id")
    return fold_api_key(history)


def revoke_api_key(store: EventStore, key_id: uuid.UUID | None, org_id: uuid.UUID | None = None) -> Created:
    """Revokes a key (again: nothing new)."""
    key = load_api_key(store, key_id, org_id)
    appended = execute(store, key.created.org_id, lambda: key, lambda found: decide_revoke(found, now()),
                       retry=False)
    return Created(key.created.key_id, appended.position)
