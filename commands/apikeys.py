"""API keys as the dashboard manages them: an operator creates and revokes its organization's keys."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec

from commands import admin
from commands.admin import Created
from commands.errors import Invalid
from commands.principal import ALL_SCOPES, Principal
from events.store import EventStore
from events.ids import parse_id


# What `admin.create_api_key` checks, stated for the OpenAPI document; the command's own check (with its
# clearer message) is the one that refuses.
ScopeName = Annotated[str, msgspec.Meta(extra_json_schema={"enum": sorted(ALL_SCOPES)})]
RatePerMinute = Annotated[int, msgspec.Meta(extra_json_schema={"minimum": 1, "maximum": admin.MAX_RATE})]


class ApiKeyCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    scopes: Annotated[list[ScopeName], msgspec.Meta(max_length=50)]
    name: Annotated[str, msgspec.Meta(max_length=100)] | None = None
    website_id: str | None = None  # pins the key to this website
    rate_per_minute: RatePerMinute | None = None


def create_key(store: EventStore, principal: Principal, body: ApiKeyCreate) -> tuple[Created, str]:
    website_id = parse_id(body.website_id) if body.website_id is not None else None
    if body.website_id is not None and website_id is None:
        raise Invalid("websiteId does not name a website", "websiteId")
    name = body.name.strip() or None if body.name is not None else None
    return admin.create_api_key(store, principal.org_id, body.scopes, website_id, body.rate_per_minute, name)


def revoke_key(store: EventStore, principal: Principal, key_id: uuid.UUID | None) -> Created:
    return admin.revoke_api_key(store, key_id, principal.org_id)
