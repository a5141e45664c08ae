"""Websites as the dashboard runs them: create one, change its settings (brand color, the origins its
visitors' pages may call from), and rotate its identity secret.

A website's current state is its creation event folded with its later changes; `website_state` is the
one place that fold happens, for the commands here and for the visitor's sign-in (`commands/chat.py`)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

import msgspec

from commands import admin
from commands.admin import Created, check_brand_color, new_identity_secret
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from commands.streams import name_stream, now
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending, Recorded

MAX_ORIGINS = 50
ORIGIN_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$")  # what urlsplit leaves of a host name or address
Origin = Annotated[str, msgspec.Meta(min_length=1, max_length=300)]


class WebsiteCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_name: str
    brand_color: str | None = None


class WebsiteSettings(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    brand_color: str | None | msgspec.UnsetType = msgspec.UNSET
    allowed_origins: Annotated[list[Origin], msgspec.Meta(max_length=MAX_ORIGINS)] | msgspec.UnsetType = msgspec.UNSET


@dataclass(frozen=True)
class WebsiteState:
    created: ev.WebsiteCreated
    version: int
    brand_color: str | None
    allowed_origins: list[str]
    identity_secret: str  # sealed (or, stored before sealing, in the clear): events/sealing.py


def website_state(history: list[Recorded]) -> WebsiteState | None:
    """The website a stream holds, as of its last event; None when the stream is no website."""
    if not history or not isinstance(history[0].event, ev.WebsiteCreated):
        return None
    created = history[0].event
    brand_color, origins, identity_secret = created.brand_color, [], created.identity_secret
    for recorded in history[1:]:
        e = recorded.event
        if isinstance(e, ev.WebsiteUpdated):
            brand_color, origins = e.brand_color, e.allowed_origins
        elif isinstance(e, ev.WebsiteIdentitySecretRotated):
            identity_secret = e.identity_secret
    return WebsiteState(created, history[-1].version, brand_color, origins, identity_secret)


def load_website(store: EventStore, org_id: uuid.UUID, website_name: str) -> WebsiteState:
    """The organization's website by its vanity id; another organization's reads as missing."""
    reserved = store.load(name_stream("website", website_name))
    state = reserved and website_state(store.load(reserved[0].event.owner_id))
    if not state or state.created.org_id != org_id:
        raise NotFound("website not found")
    return state


def normalized_origin(raw: str) -> str:
    """`scheme://host[:port]` in lowercase, as a browser sends it in `Origin`; anything more is refused."""
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
            or not ORIGIN_HOST.match(parts.hostname) or parts.username is not None or parts.password is not None
            or parts.path not in ("", "/") or parts.query or parts.fragment):
        raise Invalid(f"{raw!r} is not an origin like https://www.example.com", "allowedOrigins")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default_port = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None and port != default_port else "")


def create_website(store: EventStore, sealer: Sealer, principal: Principal, body: WebsiteCreate) -> tuple[Created, str]:
    return admin.create_website(store, sealer, principal.org_id, body.website_name, body.brand_color, "websiteName")


def update_settings(store: EventStore, principal: Principal, website_name: str, body: WebsiteSettings) -> Created:
    website = load_website(store, principal.org_id, website_name)
    if body.brand_color is not msgspec.UNSET:
        check_brand_color(body.brand_color)
    brand_color = website.brand_color if body.brand_color is msgspec.UNSET else body.brand_color
    origins = website.allowed_origins if body.allowed_origins is msgspec.UNSET else list(
        dict.fromkeys(normalized_origin(origin) for origin in body.allowed_origins))
    if (brand_color, origins) == (website.brand_color, website.allowed_origins):
        return Created(website.created.website_id, store.org_position(principal.org_id))
    changed = ev.WebsiteUpdated(org_id=principal.org_id, at=now(), website_id=website.created.website_id,
                                brand_color=brand_color, allowed_origins=origins)
    return Created(website.created.website_id,
                   store.append(Pending(website.created.website_id, website.version + 1, changed)))


def rotate_identity_secret(store: EventStore, sealer: Sealer, principal: Principal,
                           website_name: str) -> tuple[Created, str]:
    website = load_website(store, principal.org_id, website_name)
    identity_secret = new_identity_secret()
    position = store.append(Pending(website.created.website_id, website.version + 1, ev.WebsiteIdentitySecretRotated(
        org_id=principal.org_id, at=now(), website_id=website.created.website_id,
        identity_secret=sealer.seal(identity_secret))))
    return Created(website.created.website_id, position), identity_secret
