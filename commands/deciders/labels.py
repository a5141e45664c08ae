"""An organization's labels: one stream per organization holds them all, so a name is unique within it by
the stream's version (two creations of one name at once: the second is decided again and refused)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from commands.errors import Conflict, Invalid, NotFound
from commands.streams import Folded, name_stream
from events import types as ev
from events.store import Pending, Recorded

MAX_NAME = 50
COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")


@dataclass(frozen=True)
class Label:
    label_id: uuid.UUID
    name: str
    color: str


@dataclass
class Labels(Folded):
    org_id: uuid.UUID
    labels: dict[uuid.UUID, Label] = field(default_factory=dict)

    def named(self, name: str) -> Label | None:
        key = name.casefold()
        return next((label for label in self.labels.values() if label.name.casefold() == key), None)

    def found(self, label_id: uuid.UUID | None) -> Label:
        label = self.labels.get(label_id) if label_id is not None else None
        if label is None:
            raise NotFound("label not found")
        return label


def labels_stream(org_id: uuid.UUID) -> uuid.UUID:
    return name_stream("labels", str(org_id))


def fold_labels(org_id: uuid.UUID, history: list[Recorded]) -> Labels:
    state = Labels(labels_stream(org_id), history[-1].version if history else 0, org_id)
    for recorded in history:
        e = recorded.event
        if isinstance(e, (ev.LabelCreated, ev.LabelChanged)):
            state.labels[e.label_id] = Label(e.label_id, e.name, e.color)
        elif isinstance(e, ev.LabelDeleted):
            state.labels.pop(e.label_id, None)
    return state


def check_label(labels: Labels, name: str, color: str, label_id: uuid.UUID | None = None) -> str:
    """The name, trimmed: not empty, not too long, not another label's (case aside: 409); the colour `#rrggbb`."""
    name = name.strip()
    if not name or len(name) > MAX_NAME or "," in name:
        raise Invalid(f"a label's name is 1-{MAX_NAME} characters, without a comma", "name")
    if not COLOR.match(color):
        raise Invalid("color must look like #1a2b3c", "color")
    same = labels.named(name)
    if same is not None and same.label_id != label_id:
        raise Conflict(f"a label named {same.name!r} exists already", "name")
    return name


def decide_create(labels: Labels, label_id: uuid.UUID, name: str, color: str, at: datetime) -> list[Pending]:
    name = check_label(labels, name, color)
    return labels.follow(ev.LabelCreated(org_id=labels.org_id, at=at, label_id=label_id, name=name, color=color))


def decide_change(labels: Labels, label_id: uuid.UUID | None, name: str, color: str, at: datetime) -> list[Pending]:
    label = labels.found(label_id)
    name = check_label(labels, name, color, label.label_id)
    if (name, color) == (label.name, label.color):
        return []
    return labels.follow(ev.LabelChanged(org_id=labels.org_id, at=at, label_id=label.label_id, name=name,
                                         color=color))


def decide_delete(labels: Labels, label_id: uuid.UUID | None, at: datetime) -> list[Pending]:
    label = labels.found(label_id)
    return labels.follow(ev.LabelDeleted(org_id=labels.org_id, at=at, label_id=label.label_id))


def label_ids(labels: Labels, names: list[str]) -> frozenset[uuid.UUID]:
    """The ids of labels given by name (case aside); an unknown name is 400."""
    ids = set()
    for name in names:
        label = labels.named(name.strip())
        if label is None:
            raise Invalid(f"no label is named {name!r}", "labels")
        ids.add(label.label_id)
    return frozenset(ids)
