"""A visitor's chat session: who signs in (the website's identity rules) and which customer the session
is bound to.

A signed `userId` (or signed e-mail address) names the same customer on every device: the first session
for it reserves the name (a stream of its own), later ones find it."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass
from datetime import datetime

from commands.admin import EMAIL
from commands.deciders.customer import Customer
from commands.errors import Invalid, Unauthorized
from commands.streams import name_stream
from events import types as ev
from events.store import Pending


def identity_signature(identity_secret: str, value: str) -> str:
    """What the integrator's server mints: lowercase hex HMAC-SHA256 of the exact string."""
    return hmac.new(identity_secret.encode(), value.encode(), hashlib.sha256).hexdigest()


def _verify(identity_secret: str, value: str, signature: str | None, field: str) -> None:
    expected = identity_signature(identity_secret, value).encode()
    if signature is None or not hmac.compare_digest(expected, signature.encode()):
        raise Unauthorized(f"{field} is missing or does not sign the value with this website's identity secret",
                           field)


@dataclass(frozen=True)
class Identity:
    """Who the visitor says they are, once the website's identity secret vouched for it."""

    user_id: str | None
    email: str | None  # normalized

    @property
    def binding(self) -> tuple[str, str] | None:
        """The name that finds the customer: a userId names the person; an e-mail address alone names
        them when no userId is given."""
        if self.user_id is not None:
            return "customer-user", self.user_id
        return ("customer-email", self.email) if self.email is not None else None


def check_identity(identity_secret: str, user_id: str | None, signature: str | None, email: str | None,
                   email_signature: str | None) -> Identity:
    if user_id is not None:
        _verify(identity_secret, user_id, signature, "signature")
    if email is not None:
        # The address binds the customer as given, so the signature must be of that very string: a
        # signature of `Ada@Example.com` must not open the transcript of `ada@example.com`.
        if email != email.strip().lower():
            raise Invalid("the e-mail address must be in lower case without surrounding spaces; sign it in "
                          "that form", "email")
        _verify(identity_secret, email, email_signature, "emailSignature")
        if not EMAIL.match(email):
            raise Invalid("not an e-mail address", "email")
    return Identity(user_id, email)


def binding_stream(website_id: uuid.UUID, binding: tuple[str, str]) -> uuid.UUID:
    return name_stream(binding[0], f"{website_id}:{binding[1]}")


@dataclass(frozen=True)
class SessionTarget:
    """What a session binds to: the customer the identity's name reserved (None: none yet), and that
    customer's state when the session may change it (a signed e-mail address to record); `anonymous`, the
    anonymous customer whose session this browser held when the visitor signed in."""

    website: ev.WebsiteCreated
    bound_customer_id: uuid.UUID | None
    customer: Customer | None
    anonymous: Customer | None = None


def is_anonymous(customer: Customer, website_id: uuid.UUID) -> bool:
    """A visitor nobody vouched for yet: no user id, no address, of this website."""
    return customer.created.website_id == website_id and customer.user_id is None and customer.email is None


def decide_start_session(target: SessionTarget, identity: Identity, *, customer_id: uuid.UUID,
                         session_id: uuid.UUID, token_hash: str, at: datetime) -> list[Pending]:
    """The session, bound to the identity's customer; a new customer (reserving the identity's name) when
    none is bound yet, and the signed e-mail address recorded on a bound customer whose address differs.
    `customer_id` names the customer a new one would be."""
    website, binding = target.website, identity.binding
    org_id, pending = website.org_id, []
    anonymous = target.anonymous
    if target.bound_customer_id is None and binding and anonymous and is_anonymous(anonymous, website.website_id):
        # the visitor signed in during the chat: the anonymous customer becomes the identified one, so
        # their conversations, transcript and metadata stay theirs, and the team's replies still reach them
        customer_id = anonymous.created.customer_id
        pending.append(Pending(binding_stream(website.website_id, binding), 1, ev.NameReserved(
            org_id=org_id, at=at, kind=binding[0], value=f"{website.website_id}:{binding[1]}", owner_id=customer_id)))
        changes = {"userId": identity.user_id, "email": identity.email}
        pending += anonymous.follow(ev.CustomerUpdated(org_id=org_id, at=at, customer_id=customer_id,
                                                       changes={k: v for k, v in changes.items() if v is not None}))
    elif target.bound_customer_id is None:
        if binding:
            pending.append(Pending(binding_stream(website.website_id, binding), 1, ev.NameReserved(
                org_id=org_id, at=at, kind=binding[0], value=f"{website.website_id}:{binding[1]}",
                owner_id=customer_id)))
        pending.append(Pending(customer_id, 1, ev.CustomerCreated(
            org_id=org_id, at=at, customer_id=customer_id, website_id=website.website_id, email=identity.email,
            user_id=identity.user_id)))
    else:
        customer_id = target.bound_customer_id
        if target.customer is not None and target.customer.email != identity.email:
            pending += target.customer.follow(ev.CustomerUpdated(org_id=org_id, at=at, customer_id=customer_id,
                                                                 changes={"email": identity.email}))
    pending.append(Pending(session_id, 1, ev.ChatSessionStarted(
        org_id=org_id, at=at, session_id=session_id, website_id=website.website_id, customer_id=customer_id,
        token_hash=token_hash)))
    return pending
