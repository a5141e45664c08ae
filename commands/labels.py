"""An organization's labels (`/api/labels`): create, change, delete; admins and owners only."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec

from commands.admin import Created
from commands.deciders import labels as decide
from commands.deciders.labels import Labels, fold_labels, labels_stream
from commands.principal import Principal
from commands.streams import execute, now
from events.ids import new_id
from events.store import EventStore


class LabelBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(max_length=decide.MAX_NAME * 2)]
    color: str = "#6b7280"


def load_labels(store: EventStore, org_id: uuid.UUID) -> Labels:
    return fold_labels(org_id, store.load(labels_stream(org_id)))


def create_label(store: EventStore, principal: Principal, body: LabelBody) -> Created:
    """A new label; a name the organization has already (case aside) is 409, even when two come at once."""
    label_id = new_id()
    appended = execute(store, principal.org_id, lambda: load_labels(store, principal.org_id),
                       lambda labels: decide.decide_create(labels, label_id, body.name, body.color, now()))
    return Created(label_id, appended.position)


def change_label(store: EventStore, principal: Principal, label_id: uuid.UUID | None, body: LabelBody) -> Created:
    appended = execute(store, principal.org_id, lambda: load_labels(store, principal.org_id),
                       lambda labels: decide.decide_change(labels, label_id, body.name, body.color, now()))
    return Created(appended.state.found(label_id).label_id, appended.position)


def delete_label(store: EventStore, principal: Principal, label_id: uuid.UUID | None) -> Created:
    appended = execute(store, principal.org_id, lambda: load_labels(store, principal.org_id),
                       lambda labels: decide.decide_delete(labels, label_id, now()))
    return Created(appended.state.found(label_id).label_id, appended.position)
