"""Canned responses: replies an operator inserts from the composer by their shortcut (`/refund`), the
organization's or their own (`personal`). Every change is decided on the organization's one stream of them
(commands/deciders/canned_response.py), again from a fresh load when another change came first, so two
operators giving two responses the same shortcut at once get one 409."""

from __future__ import annotations

import uuid

import msgspec

from commands.admin import Created
from commands.deciders.canned_response import Catalog, decide_create, decide_delete, decide_update, fold_catalog
from commands.principal import Principal
from commands.streams import execute, name_stream, now
from events.ids import new_id
from events.store import EventStore


class CannedResponseCreate(msgspec.Struct, forbid_unknown_fields=True):
    shortcut: str
    content: str
    personal: bool = False


class CannedResponseUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """The fields given change; the others stay."""

    shortcut: str | None = None
    content: str | None = None
    personal: bool | None = None


def catalog_stream(org_id: uuid.UUID) -> uuid.UUID:
    return name_stream("canned-responses", str(org_id))


def load_catalog(store: EventStore, org_id: uuid.UUID) -> Catalog:
    stream_id = catalog_stream(org_id)
    return fold_catalog(stream_id, org_id, store.load(stream_id))


def create(store: EventStore, principal: Principal, body: CannedResponseCreate) -> Created:
    response_id = new_id()
    appended = execute(store, principal.org_id, lambda: load_catalog(store, principal.org_id),
                       lambda catalog: decide_create(catalog, principal, response_id, body.shortcut, body.content,
                                                     body.personal, now()))
    return Created(response_id, appended.position)


def update(store: EventStore, principal: Principal, response_id: uuid.UUID | None,
           body: CannedResponseUpdate) -> Created:
    appended = execute(store, principal.org_id, lambda: load_catalog(store, principal.org_id),
                       lambda catalog: decide_update(catalog, principal, response_id, shortcut=body.shortcut,
                                                     content=body.content, personal=body.personal, at=now()))
    assert response_id is not None  # decide_update refused a missing one
    return Created(response_id, appended.position)


def delete(store: EventStore, principal: Principal, response_id: uuid.UUID | None) -> Created:
    appended = execute(store, principal.org_id, lambda: load_catalog(store, principal.org_id),
                       lambda catalog: decide_delete(catalog, principal, response_id, now()))
    assert response_id is not None
    return Created(response_id, appended.position)
