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
from commands.errors import Invalid
from commands.principal import Principal
from commands.streams import load, name_stream, now
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
Source = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
SOURCE_KIND = "document-source"


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

    source: Source


@dataclass(frozen=True)
class Fields:
    """What a document says, compared by the import to decide whether a file changed."""

    title: str
    locale: str
    category: str | None
    published: bool
    content: str


def _fields(state: ev.DocumentState) -> Fields:
    return Fields(state.title, state.locale, state.category, state.published, state.content)


def _check_title(title: str) -> str:
    if not title.strip():
        raise Invalid("title must not be empty", "title")
    return title.strip()


def _checked(fields: Fields) -> Fields:
    """The rules of the request bodies, for what arrives another way (an imported file)."""
    if not LOCALE.match(fields.locale):
        raise Invalid("locale must be a language tag such as en or pt-BR", "locale")
    for name, value, limit in (("title", fields.title, MAX_TITLE), ("category", fields.category or "", MAX_CATEGORY),
                               ("content", fields.content, MAX_CONTENT)):
        if len(value) > limit:
            raise Invalid(f"{name} is longer than {limit} characters", name)
    return Fields(_check_title(fields.title), fields.locale, fields.category, fields.published, fields.content)


@dataclass(frozen=True)
class Document:
    state: ev.DocumentState
    version: int


def load_document(store: EventStore, principal: Principal, document_id: uuid.UUID | None) -> Document:
    """The live document of this organization (and pinned website); deleted or foreign ones are 404."""
    entity = load(store, document_id, ev.DocumentCreated, principal.org_id, "document")
    last = entity.history[-1].event
    if isinstance(last, ev.DocumentDeleted) or (
            principal.website_id is not None and entity.created.website_id != principal.website_id):
        load(store, None, ev.DocumentCreated, principal.org_id, "document")
    assert isinstance(last, ev.DocumentState)
    return Document(last, entity.version)


def _created(org_id: uuid.UUID, website_id: uuid.UUID, document_id: uuid.UUID, fields: Fields,
             source: str | None = None) -> ev.DocumentCreated:
    return ev.DocumentCreated(org_id=org_id, at=now(), document_id=document_id, website_id=website_id,
                              source=source, **fields.__dict__)


def _updated(state: ev.DocumentState, fields: Fields) -> ev.DocumentUpdated:
    return ev.DocumentUpdated(org_id=state.org_id, at=now(), document_id=state.document_id,
                              website_id=state.website_id, **fields.__dict__)


def create_document(store: EventStore, principal: Principal, body: DocumentCreate) -> Created:
    website_id = target_website(store, principal, body.website_id)
    fields = Fields(_check_title(body.title), body.locale, body.category, body.published, body.content)
    document_id = new_id()
    position = store.append(Pending(document_id, 1, _created(principal.org_id, website_id, document_id, fields)))
    return Created(document_id, position)


def update_document(store: EventStore, principal: Principal, document_id: uuid.UUID | None,
                    body: DocumentUpdate) -> Created:
    document = load_document(store, principal, document_id)
    changes = {k: v for k, v in msgspec.structs.asdict(body).items() if v is not msgspec.UNSET}
    if "title" in changes:
        changes["title"] = _check_title(changes["title"])
    fields = Fields(**{**_fields(document.state).__dict__, **changes})
    if fields == _fields(document.state):
        return Created(document.state.document_id, store.org_position(principal.org_id))
    position = store.append(Pending(document.state.document_id, document.version + 1, _updated(document.state, fields)))
    return Created(document.state.document_id, position)


def delete_document(store: EventStore, principal: Principal, document_id: uuid.UUID | None) -> Created:
    document = load_document(store, principal, document_id)
    position = store.append(Pending(document.state.document_id, document.version + 1, ev.DocumentDeleted(
        org_id=principal.org_id, at=now(), document_id=document.state.document_id,
        website_id=document.state.website_id)))
    return Created(document.state.document_id, position)


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


def import_document(store: EventStore, website_id: uuid.UUID, source: str, fields: Fields) -> Imported:
    """Creates the document of an imported file, or updates it when the file changed.

    The file's path is reserved as a name whose latest reservation points at the document, so a
    re-import finds it from the event store alone; a document deleted since is created again.
    """
    org_id = _org_of(store, website_id)
    fields = _checked(fields)
    name_id = name_stream(SOURCE_KIND, f"{website_id}:{source}")
    reservations = store.load(name_id)
    if reservations:
        reserved = reservations[-1].event
        assert isinstance(reserved, ev.NameReserved)
        history = store.load(reserved.owner_id)
        last = history[-1].event
        if isinstance(last, ev.DocumentState):
            if _fields(last) == fields:
                return Imported("unchanged", Created(last.document_id, store.org_position(org_id)))
            position = store.append(Pending(last.document_id, history[-1].version + 1, _updated(last, fields)))
            return Imported("updated", Created(last.document_id, position))
    document_id = new_id()
    reservation = ev.NameReserved(org_id=org_id, at=now(), kind=SOURCE_KIND, value=f"{website_id}:{source}",
                                  owner_id=document_id)
    position = store.append(Pending(name_id, len(reservations) + 1, reservation),
                            Pending(document_id, 1, _created(org_id, website_id, document_id, fields, source)))
    return Imported("created", Created(document_id, position))


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
