"""Websites as the dashboard runs them: create one, change its settings (brand color, the origins its
visitors' pages may call from), its widget's, and rotate its identity secret (the fold and the decisions:
`commands/deciders/website.py`)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

import msgspec

from commands import admin
from commands.admin import Created, new_identity_secret
from commands.deciders.website import (WIDGET_FIELDS, WebsiteState, decide_rotate_identity_secret, decide_settings,
                                       decide_widget, website_state)
from commands.errors import NotFound
from commands.principal import Principal
from commands.streams import execute, name_stream, now
from events.sealing import Sealer
from events.store import EventStore

MAX_ORIGINS = 50
Origin = Annotated[str, msgspec.Meta(min_length=1, max_length=300)]


# `#rrggbb`, as `admin.check_brand_color` checks it (with a clearer message than a decoding error would give)
BrandColor = Annotated[str, msgspec.Meta(extra_json_schema={"pattern": admin.HEX_COLOR.pattern})]


class WebsiteCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_name: str
    brand_color: BrandColor | None = None


class WebsiteSettings(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    brand_color: BrandColor | None | msgspec.UnsetType = msgspec.UNSET
    allowed_origins: Annotated[list[Origin], msgspec.Meta(max_length=MAX_ORIGINS)] | msgspec.UnsetType = msgspec.UNSET


# the languages the widget has a catalogue of (web/core/i18n.js)
LANGUAGES = ("en", "fr", "de", "es", "pt", "ar")
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Message = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class WidgetSettings(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """The widget's settings to change (only the fields given); a null text is the widget's own words in the
    visitor's language."""

    brand_color: BrandColor | msgspec.UnsetType = msgspec.UNSET
    title: Text | None | msgspec.UnsetType = msgspec.UNSET
    welcome_message: Message | None | msgspec.UnsetType = msgspec.UNSET
    away_message: Message | None | msgspec.UnsetType = msgspec.UNSET
    position: Literal["left", "right"] | msgspec.UnsetType = msgspec.UNSET
    launcher_label: Annotated[str, msgspec.Meta(min_length=1, max_length=40)] | None | msgspec.UnsetType = msgspec.UNSET
    help_search: bool | msgspec.UnsetType = msgspec.UNSET
    ratings: bool | msgspec.UnsetType = msgspec.UNSET
    theme: Literal["light", "dark", "auto"] | msgspec.UnsetType = msgspec.UNSET
    language: Literal[LANGUAGES] | msgspec.UnsetType = msgspec.UNSET


def load_website(store: EventStore, org_id: uuid.UUID, website_name: str) -> WebsiteState:
    """The organization's website by its vanity id; another organization's reads as missing."""
    reserved = store.load(name_stream("website", website_name))
    state = reserved and website_state(store.load(reserved[0].event.owner_id))
    if not state or state.created.org_id != org_id:
        raise NotFound("website not found")
    return state


def create_website(store: EventStore, sealer: Sealer, principal: Principal, body: WebsiteCreate) -> tuple[Created, str]:
    return admin.create_website(store, sealer, principal.org_id, body.website_name, body.brand_color, "websiteName")


def update_settings(store: EventStore, principal: Principal, website_name: str, body: WebsiteSettings) -> Created:
    appended = execute(store, principal.org_id, lambda: load_website(store, principal.org_id, website_name),
                       lambda website: decide_settings(website, now(), brand_color=body.brand_color,
                                                       allowed_origins=body.allowed_origins), retry=False)
    return Created(appended.state.created.website_id, appended.position)


def configure_widget(store: EventStore, principal: Principal, website_name: str, body: WidgetSettings) -> Created:
    changes = {name: value for name in WIDGET_FIELDS if (value := getattr(body, name)) is not msgspec.UNSET}
    appended = execute(store, principal.org_id, lambda: load_website(store, principal.org_id, website_name),
                       lambda website: decide_widget(website, now(), body.brand_color, changes), retry=False)
    return Created(appended.state.created.website_id, appended.position)


def rotate_identity_secret(store: EventStore, sealer: Sealer, principal: Principal,
                           website_name: str) -> tuple[Created, str]:
    identity_secret = new_identity_secret()
    sealed = sealer.seal(identity_secret)
    appended = execute(store, principal.org_id, lambda: load_website(store, principal.org_id, website_name),
                       lambda website: decide_rotate_identity_secret(website, sealed, now()), retry=False)
    return Created(appended.state.created.website_id, appended.position), identity_secret
