"""Single sign-on with an OpenID Connect provider: an organization's settings (`PUT /api/organization/sso`,
owners only) and signing in the operator a provider vouches for (`GET /api/sso/callback`).

The settings live in one stream per organization (`sso_stream`), each change a whole `SsoConfigured`;
the client secret is write-only: a change that gives none keeps the one before."""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from commands.admin import Created, create_operator, issue_token
from commands.deciders.operator import check_role, decide_join, fold_operator
from commands.errors import Forbidden, Invalid
from commands.principal import Principal
from commands.streams import execute, load, name_stream, now
from events import origin
from events import types as ev
from events.sealing import Sealer
from events.types import Origin
from events.store import EventStore, Pending

DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
MAX_DOMAINS = 50
MAX_LABEL = 60
# A provider gives a membership, never the ownership of the organization: an owner gives that to a person.
SSO_ROLES = ("agent", "admin")
ShortText = Annotated[str, msgspec.Meta(max_length=2048)]


class SsoSettings(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    issuer: ShortText
    client_id: ShortText
    allowed_domains: list[ShortText]
    default_role: str = "agent"
    button_label: str = "Single sign-on"
    enabled: bool = True
    client_secret: ShortText | UnsetType = UNSET  # write-only: unset keeps the secret already stored


def sso_stream(org_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"parley:sso:{org_id}")


def current_sso(store: EventStore, sealer: Sealer, org_id: uuid.UUID) -> ev.SsoConfigured | None:
    """The organization's latest settings, the client secret opened, or None if it never configured single
    sign-on."""
    history = store.load(sso_stream(org_id))
    if not history:
        return None
    stored: ev.SsoConfigured = history[-1].event  # type: ignore[assignment]
    return msgspec.structs.replace(stored, client_secret=sealer.open(stored.client_secret))


def _domains(domains: list[str]) -> list[str]:
    cleaned = sorted({domain.strip().lower().removeprefix("@") for domain in domains if domain.strip()})
    if len(cleaned) > MAX_DOMAINS:
        raise Invalid(f"at most {MAX_DOMAINS} domains", "allowedDomains")
    for domain in cleaned:
        if not DOMAIN.match(domain):
            raise Invalid(f"{domain!r} is not an e-mail domain (example.com)", "allowedDomains")
    return cleaned


def configure_sso(store: EventStore, sealer: Sealer, principal: Principal, body: SsoSettings) -> Created:
    """Records the settings; the caller has checked the issuer's discovery document (readapi/oidc.py)."""
    org_id = principal.org_id
    load(store, org_id, ev.OrganizationCreated, org_id, "organization")
    if body.default_role not in SSO_ROLES:
        check_role(body.default_role, "defaultRole")
        raise Invalid("a provider's new operators are agents or admins; an owner makes owners", "defaultRole")
    label = body.button_label.strip()
    if not label or len(label) > MAX_LABEL:
        raise Invalid(f"the button label has 1 to {MAX_LABEL} characters", "buttonLabel")
    client_id = body.client_id.strip()
    if not client_id:
        raise Invalid("the client id is required", "clientId")
    domains = _domains(body.allowed_domains)
    if body.enabled and not domains:
        raise Invalid("name at least one e-mail domain whose operators may sign in", "allowedDomains")
    stream = sso_stream(org_id)
    given = None if isinstance(body.client_secret, UnsetType) else body.client_secret.strip()
    sealed = given and sealer.seal(given)

    def decide(history: list) -> list[Pending]:
        before = history[-1].event if history else None
        if (before is None and given is None) or given == "":
            raise Invalid("the client secret is required", "clientSecret")
        # unset, or the same secret given again, keeps the stored (sealed) one: unchanged settings append nothing
        keep = before is not None and (given is None or sealer.open(before.client_secret) == given)
        configured = ev.SsoConfigured(org_id=org_id, at=now(), issuer=body.issuer.strip(), client_id=client_id,
                                      client_secret=before.client_secret if keep else sealed, allowed_domains=domains,
                                      default_role=body.default_role, button_label=label, enabled=body.enabled)
        if before is not None and msgspec.structs.replace(before, at=configured.at, origin=UNSET) == configured:
            return []
        return [Pending(stream, len(history) + 1, configured)]

    appended = execute(store, org_id, lambda: store.load(stream), decide)
    return Created(org_id, appended.position)


def sign_in_with_sso(store: EventStore, settings: ev.SsoConfigured, email: str,
                     address: str | None = None) -> tuple[Created, str]:
    """An access token to the organization for the operator with this e-mail address (verified by the
    provider, in an allowed domain: the caller checked), created with the default role when no operator has
    it, made a member with that role when it belongs to other organizations only. A disabled member is
    refused. The operator is the origin of what it appends, from `address` (the audit log)."""
    org_id = settings.org_id
    email = email.strip().lower()
    reservation = store.load(name_stream("operator-email", email))
    if not reservation:
        origin.acting(Origin("operator", address=address))  # its id is made with it
        # nobody knows this password: the operator signs in through the provider (or has it reset)
        created, token = create_operator(store, org_id, email, secrets.token_urlsafe(32), settings.default_role)
        return created, token
    operator_id = reservation[0].event.owner_id
    origin.acting(Origin("operator", operator_id, address=address))
    membership = fold_operator(store.load(operator_id)).memberships.get(org_id)
    if membership is None:
        execute(store, org_id, lambda: fold_operator(store.load(operator_id)),
                lambda operator: decide_join(operator, org_id, settings.default_role, now()))  # type: ignore[arg-type]
    elif membership.status == "disabled":
        raise Forbidden("this operator is disabled in the organization")
    token, position = issue_token(store, org_id, operator_id)
    return Created(operator_id, position), token
