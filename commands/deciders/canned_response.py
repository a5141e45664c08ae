"""An organization's canned responses, folded from its one stream: creating, changing and deleting them.

A shortcut is unique in its namespace: the organization's shared responses, or one author's personal ones
(a personal `/refund` may stand beside the organization's). A personal response is its author's only:
another operator is told it does not exist. The organization's are every operator's to use and an admin's
to change."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from commands.errors import Conflict, Forbidden, Invalid, NotFound
from commands.principal import Principal
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

SHORTCUT = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
MAX_CONTENT = 5000
MAX_RESPONSES = 1000  # per organization, personal ones included: the composer's menu reads them all


@dataclass
class Response:
    response_id: uuid.UUID
    author_id: uuid.UUID
    personal: bool
    shortcut: str
    content: str

    def namespace(self) -> uuid.UUID | None:
        """Whose shortcuts this one must differ from: its author's (personal) or the organization's (None)."""
        return self.author_id if self.personal else None


@dataclass
class Catalog(Folded):
    org_id: uuid.UUID
    responses: dict[uuid.UUID, Response] = field(default_factory=dict)

    def visible(self, principal: Principal, response_id: uuid.UUID | None) -> Response:
        """The response as `principal` may see it: another's personal one, like a missing one, is 404."""
        found = self.responses.get(response_id) if response_id else None
        if found is None or (found.personal and found.author_id != principal.operator_id):
            raise NotFound("canned response not found")
        return found

    def check_unique(self, shortcut: str, namespace: uuid.UUID | None, exclude: uuid.UUID | None = None) -> None:
        taken = any(r.shortcut == shortcut and r.namespace() == namespace and r.response_id != exclude
                    for r in self.responses.values())
        if taken:
            whose = "your personal responses" if namespace else "the organization's responses"
            raise Conflict(f"the shortcut /{shortcut} is taken among {whose}")


def fold_catalog(stream_id: uuid.UUID, org_id: uuid.UUID, history: list[Recorded]) -> Catalog:
    catalog = Catalog(stream_id, history[-1].version if history else 0, org_id)
    for recorded in history:
        event = recorded.event
        if isinstance(event, ev.CannedResponseCreated):
            catalog.responses[event.response_id] = Response(event.response_id, event.author_id, event.personal,
                                                            event.shortcut, event.content)
        elif isinstance(event, ev.CannedResponseUpdated) and (found := catalog.responses.get(event.response_id)):
            found.personal = found.personal if event.personal is None else event.personal
            found.shortcut = event.shortcut or found.shortcut
            found.content = found.content if event.content is None else event.content
        elif isinstance(event, ev.CannedResponseDeleted):
            catalog.responses.pop(event.response_id, None)
    return catalog


def valid_shortcut(raw: str) -> str:
    """`/Refund` and `refund` are the same shortcut, `refund`."""
    shortcut = raw.strip().removeprefix("/").lower()
    if not SHORTCUT.fullmatch(shortcut):
        raise Invalid("a shortcut is 1 to 32 lower-case letters, digits, '-' or '_', starting with a letter or "
                      "digit (a leading '/' is dropped)", "shortcut")
    return shortcut


def valid_content(content: str) -> str:
    if not content.strip():
        raise Invalid("content is empty", "content")
    if len(content) > MAX_CONTENT:
        raise Invalid(f"content is longer than {MAX_CONTENT} characters", "content")
    return content


def may_share(principal: Principal) -> None:
    if not principal.has_role("admin"):
        raise Forbidden("the organization's canned responses are an admin's to change; yours may be personal")


def decide_create(catalog: Catalog, principal: Principal, response_id: uuid.UUID, shortcut: str, content: str,
                  personal: bool, at: datetime) -> list[Pending]:
    if not personal:
        may_share(principal)
    if len(catalog.responses) >= MAX_RESPONSES:
        raise Conflict(f"the organization has {MAX_RESPONSES} canned responses, the most it may have")
    assert principal.operator_id is not None
    shortcut, content = valid_shortcut(shortcut), valid_content(content)
    catalog.check_unique(shortcut, principal.operator_id if personal else None)
    return catalog.follow(ev.CannedResponseCreated(
        org_id=catalog.org_id, at=at, response_id=response_id, author_id=principal.operator_id, personal=personal,
        shortcut=shortcut, content=content))


def decide_update(catalog: Catalog, principal: Principal, response_id: uuid.UUID | None, *,
                  shortcut: str | None, content: str | None, personal: bool | None, at: datetime) -> list[Pending]:
    """The fields given (None: unchanged); nothing when they are what the response has. A shared response
    becomes personal only by its author, an admin, whose it then is."""
    current = catalog.visible(principal, response_id)
    if not current.personal or personal is False:
        may_share(principal)
    new_shortcut = current.shortcut if shortcut is None else valid_shortcut(shortcut)
    new_content = current.content if content is None else valid_content(content)
    new_personal = current.personal if personal is None else personal
    if (new_shortcut, new_content, new_personal) == (current.shortcut, current.content, current.personal):
        return []
    if new_personal and not current.personal and current.author_id != principal.operator_id:
        raise Invalid("only its author may make a shared response personal", "personal")
    catalog.check_unique(new_shortcut, current.author_id if new_personal else None, exclude=current.response_id)
    return catalog.follow(ev.CannedResponseUpdated(
        org_id=catalog.org_id, at=at, response_id=current.response_id,
        personal=new_personal if new_personal != current.personal else None,
        shortcut=new_shortcut if new_shortcut != current.shortcut else None,
        content=new_content if new_content != current.content else None))


def decide_delete(catalog: Catalog, principal: Principal, response_id: uuid.UUID | None, at: datetime) -> list[Pending]:
    current = catalog.visible(principal, response_id)
    if not current.personal:
        may_share(principal)
    return catalog.follow(ev.CannedResponseDeleted(org_id=catalog.org_id, at=at, response_id=current.response_id))
