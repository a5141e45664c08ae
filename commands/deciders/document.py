"""A help document: its edits, its deletion, and the import of a file that names it by its path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from commands.errors import Invalid
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

SOURCE_KIND = "document-source"


@dataclass(frozen=True)
class Fields:
    """What a document says, compared by the import to decide whether a file changed."""

    title: str
    locale: str
    category: str | None
    published: bool
    content: str


def fields_of(state: ev.DocumentState) -> Fields:
    return Fields(state.title, state.locale, state.category, state.published, state.content)


def check_title(title: str) -> str:
    if not title.strip():
        raise Invalid("title must not be empty", "title")
    return title.strip()


@dataclass
class Document(Folded):
    state: ev.DocumentState  # the last create or update: each carries the document's whole state
    deleted: bool = False


def fold_document(history: list[Recorded]) -> Document:
    state = history[0].event
    assert isinstance(state, ev.DocumentCreated)
    document = Document(state.document_id, history[-1].version, state)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.DocumentDeleted):
            document.deleted = True
        elif isinstance(event, ev.DocumentState):
            document.state, document.deleted = event, False
    return document


def created(org_id: uuid.UUID, website_id: uuid.UUID, document_id: uuid.UUID, fields: Fields, at: datetime,
            source: str | None = None) -> ev.DocumentCreated:
    return ev.DocumentCreated(org_id=org_id, at=at, document_id=document_id, website_id=website_id, source=source,
                              **fields.__dict__)


def _updated(document: Document, fields: Fields, at: datetime) -> list[Pending]:
    state = document.state
    return document.follow(ev.DocumentUpdated(org_id=state.org_id, at=at, document_id=state.document_id,
                                              website_id=state.website_id, **fields.__dict__))


def decide_update(document: Document, changes: dict, at: datetime) -> list[Pending]:
    """The fields given (a title must say something); nothing when the document says that already."""
    if "title" in changes:
        changes = {**changes, "title": check_title(changes["title"])}
    fields = Fields(**{**fields_of(document.state).__dict__, **changes})
    return [] if fields == fields_of(document.state) else _updated(document, fields, at)


def decide_delete(document: Document, at: datetime) -> list[Pending]:
    return document.follow(ev.DocumentDeleted(org_id=document.state.org_id, at=at,
                                              document_id=document.state.document_id,
                                              website_id=document.state.website_id))


@dataclass(frozen=True)
class Source:
    """An imported file's path, reserved as a name whose latest reservation points at its document
    (`document`: that document, None when there is none or it was deleted since)."""

    name: Folded  # the reservations' stream
    document: Document | None


def decide_import(source: Source, org_id: uuid.UUID, website_id: uuid.UUID, path: str, fields: Fields, *,
                  document_id: uuid.UUID, at: datetime) -> list[Pending]:
    """Updates the file's document when the file changed (nothing when it did not); creates it
    (`document_id`), reserving the path for it, when there is none."""
    document = source.document
    if document is not None and not document.deleted:
        return [] if fields_of(document.state) == fields else _updated(document, fields, at)
    reservation = ev.NameReserved(org_id=org_id, at=at, kind=SOURCE_KIND, value=f"{website_id}:{path}",
                                  owner_id=document_id)
    return [*source.name.follow(reservation),
            Pending(document_id, 1, created(org_id, website_id, document_id, fields, at, path))]
