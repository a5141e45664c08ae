"""Writing help documents: the operator's create, update and delete, and the idempotent folder import."""

from __future__ import annotations

import re
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Literal

import msgspec

from commands.admin import Created
from commands.customers import target_website
from commands.deciders.document import (SOURCE_KIND, Document, Fields, Source, check_title, created,
                                        decide_delete, decide_import, decide_update, fold_document)
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from commands.streams import Folded, execute, load, name_stream, now
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id

MAX_TITLE, MAX_CATEGORY, MAX_CONTENT = 300, 200, 500_000
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TITLE)]
# A BCP 47-like tag: it also names the search collection, so its alphabet is kept small.
LOCALE_PATTERN = r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$"
LOCALE = re.compile(LOCALE_PATTERN)
Locale = Annotated[str, msgspec.Meta(pattern=LOCALE_PATTERN)]
Category = Annotated[str, msgspec.Meta(max_length=MAX_CATEGORY)]
Content = Annotated[str, msgspec.Meta(max_length=MAX_CONTENT)]
SourcePath = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]


class DocumentCreate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    website_id: str
    title: Title
    content: Content = ""
    locale: Locale = "en"
    category: Category | None = None
    published: bool = False


class DocumentUpdate(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """PUT changes only the fields it names; a document never moves to another website."""

    title: Title | msgspec.UnsetType = msgspec.UNSET
    content: Content | msgspec.UnsetType = msgspec.UNSET
    locale: Locale | msgspec.UnsetType = msgspec.UNSET
    category: Category | None | msgspec.UnsetType = msgspec.UNSET
    published: bool | msgspec.UnsetType = msgspec.UNSET


class DocumentImport(DocumentCreate, kw_only=True):
    """One file of an imported folder: a document to create, and `source`, its path in the folder, which
    a re-import finds the document by (the same key as `parley docs import` on the server's machine)."""

    source: SourcePath


def _checked(fields: Fields) -> Fields:
    """The rules of the request bodies, for what arrives another way (an imported file)."""
    if not LOCALE.match(fields.locale):
        raise Invalid("locale must be a language tag such as en or pt-BR", "locale")
    for name, value, limit in (("title", fields.title, MAX_TITLE), ("category", fields.category or "", MAX_CATEGORY),
                               ("content", fields.content, MAX_CONTENT)):
        if len(value) > limit:
            raise Invalid(f"{name} is longer than {limit} characters", name)
    return Fields(check_title(fields.title), fields.locale, fields.category, fields.published, fields.content)


def load_document(store: EventStore, principal: Principal, document_id: uuid.UUID | None) -> Document:
    """The live document of this organization (and pinned website); deleted or foreign ones are 404."""
    document = fold_document(load(store, document_id, ev.DocumentCreated, principal.org_id, "document").history)
    if document.deleted or (principal.website_id is not None and document.state.website_id != principal.website_id):
        raise NotFound("document not found")
    return document


def create_document(store: EventStore, principal: Principal, body: DocumentCreate) -> Created:
    website_id = target_website(store, principal, body.website_id)
    fields = Fields(check_title(body.title), body.locale, body.category, body.published, body.content)
    document_id = new_id()
    position = store.append(Pending(document_id, 1, created(principal.org_id, website_id, document_id, fields,
                                                           now())))
    return Created(document_id, position)


def update_document(store: EventStore, principal: Principal, document_id: uuid.UUID | None,
                    body: DocumentUpdate) -> Created:
    changes = {k: v for k, v in msgspec.structs.asdict(body).items() if v is not msgspec.UNSET}
    appended = execute(store, principal.org_id, lambda: load_document(store, principal, document_id),
                       lambda document: decide_update(document, changes, now()), retry=False)
    return Created(appended.state.state.document_id, appended.position)


def delete_document(store: EventStore, principal: Principal, document_id: uuid.UUID | None) -> Created:
    appended = execute(store, principal.org_id, lambda: load_document(store, principal, document_id),
                       lambda document: decide_delete(document, now()), retry=False)
    return Created(appended.state.state.document_id, appended.position)


# --- import of a folder of Markdown files -------------------------------------------------------------

HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$")
ImportOutcome = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class Imported:
    outcome: ImportOutcome
    created: Created  # the document, and the position that holds it


def parse_markdown(text: str, fallback_title: str) -> tuple[str, str]:
    """(title, content): the title is the first level-one heading, which the content then leaves out."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = HEADING.match(line)
        if match:
            before, after = "\n".join(lines[:i]).strip(), "\n".join(lines[i + 1:]).strip()
            return match.group(1).strip(), "\n\n".join(part for part in (before, after) if part)
    return fallback_title, text.strip()


def read_folder(root: Path, locale: str, published: bool) -> list[tuple[str, Fields]]:
    """(source, fields) of each Markdown file under `root`, in path order: the title from the first
    heading (else the file's name), the category from the sub-folder, the source its relative path."""
    imported = []
    for path in sorted(p for p in root.rglob("*.md") if p.is_file()):
        source = path.relative_to(root)
        title, content = parse_markdown(path.read_text(encoding="utf-8"), path.stem.replace("-", " "))
        category = source.parent.as_posix() if source.parent != Path(".") else None
        imported.append((source.as_posix(), Fields(title, locale, category, published, content)))
    return imported


def import_each(files: list[tuple[str, Fields]], import_one: Callable[[str, Fields], ImportOutcome],
                progress: Callable[[int, int, str], None]) -> Counter[str]:
    """Imports the files of `read_folder` one by one (into the store, or over HTTP): how many of each outcome."""
    outcomes: Counter[str] = Counter()
    for done, (source, fields) in enumerate(files, start=1):
        outcomes[import_one(source, fields)] += 1
        progress(done, len(files), source)
    return outcomes


def load_source(store: EventStore, website_id: uuid.UUID, path: str) -> Source:
    name_id = name_stream(SOURCE_KIND, f"{website_id}:{path}")
    reservations = store.load(name_id)
    if not reservations:
        return Source(Folded(name_id, 0), None)
    reserved = reservations[-1].event
    assert isinstance(reserved, ev.NameReserved)
    return Source(Folded(name_id, reservations[-1].version), fold_document(store.load(reserved.owner_id)))


def import_document(store: EventStore, website_id: uuid.UUID, source: str, fields: Fields) -> Imported:
    """Creates the document of an imported file, or updates it when the file changed.

    The file's path is reserved as a name whose latest reservation points at the document, so a
    re-import finds it from the event store alone; a document deleted since is created again.
    """
    org_id = _org_of(store, website_id)
    fields = _checked(fields)
    new_document_id = new_id()
    appended = execute(store, org_id, lambda: load_source(store, website_id, source), lambda found: decide_import(
        found, org_id, website_id, source, fields, document_id=new_document_id, at=now()), retry=False)
    document = appended.state.document
    if document is None or document.deleted:
        return Imported("created", Created(new_document_id, appended.position))
    return Imported("updated" if appended.pending else "unchanged",
                    Created(document.state.document_id, appended.position))


def import_sent_document(store: EventStore, principal: Principal, body: DocumentImport) -> Imported:
    """POST /api/documents/import: one file of a folder an operator imports from their own machine."""
    website_id = target_website(store, principal, body.website_id)
    return import_document(store, website_id, body.source,
                           Fields(body.title, body.locale, body.category, body.published, body.content))


def _org_of(store: EventStore, website_id: uuid.UUID) -> uuid.UUID:
    history = store.load(website_id)
    if not history or not isinstance(history[0].event, ev.WebsiteCreated):
        raise Invalid("no such website", "website")
    return history[0].event.org_id
