"""The canned responses' decisions, from events folded by hand: shortcuts unique per namespace, personal ones
their author's only, the organization's an admin's to change."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from commands.deciders.canned_response import (Catalog, decide_create, decide_delete, decide_update, fold_catalog,
                                               valid_shortcut)
from commands.errors import Conflict, Forbidden, Invalid, NotFound
from commands.principal import Principal
from events import types as ev
from events.store import Recorded

AT = datetime(2026, 1, 2, tzinfo=timezone.utc)
ORG = uuid.uuid4()
ADMIN = Principal("operator", ORG, uuid.uuid4(), operator_id=uuid.uuid4(), role="admin")
AGENT = Principal("operator", ORG, uuid.uuid4(), operator_id=uuid.uuid4(), role="agent")
OTHER_AGENT = Principal("operator", ORG, uuid.uuid4(), operator_id=uuid.uuid4(), role="agent")
STREAM = uuid.uuid4()


def catalog_after(*decisions) -> Catalog:
    """The catalog once each decision (a function of the catalog so far) is appended."""
    history: list[Recorded] = []
    for decide in decisions:
        for pending in decide(fold_catalog(STREAM, ORG, history)):
            history.append(Recorded(len(history) + 1, STREAM, pending.version, pending.event))
    return fold_catalog(STREAM, ORG, history)


def create(principal, shortcut, personal, response_id=None, content="Hi {{visitor.name}}"):
    return lambda catalog: decide_create(catalog, principal, response_id or uuid.uuid4(), shortcut, content,
                                         personal, AT)


def test_shortcuts_are_normalised_and_checked():
    assert valid_shortcut(" /Refund ") == "refund"
    for bad in ("", "/", "two words", "-dash", "x" * 33, "ünï"):
        with pytest.raises(Invalid):
            valid_shortcut(bad)


def test_a_shortcut_is_unique_among_the_organizations_and_among_each_authors():
    catalog = catalog_after(create(ADMIN, "refund", False), create(AGENT, "refund", True),
                            create(OTHER_AGENT, "refund", True))
    assert len(catalog.responses) == 3
    with pytest.raises(Conflict):
        decide_create(catalog, ADMIN, uuid.uuid4(), "/REFUND", "again", False, AT)
    with pytest.raises(Conflict):
        decide_create(catalog, AGENT, uuid.uuid4(), "refund", "again", True, AT)


def test_personal_responses_are_their_authors_only():
    mine = uuid.uuid4()
    catalog = catalog_after(create(AGENT, "hello", True, mine))
    assert catalog.visible(AGENT, mine).shortcut == "hello"
    for act in (lambda: catalog.visible(OTHER_AGENT, mine), lambda: catalog.visible(ADMIN, mine),
                lambda: decide_update(catalog, OTHER_AGENT, mine, shortcut=None, content="x", personal=None, at=AT),
                lambda: decide_delete(catalog, ADMIN, mine, AT)):
        with pytest.raises(NotFound):
            act()


def test_the_organizations_responses_are_an_admins_to_change():
    shared = uuid.uuid4()
    with pytest.raises(Forbidden):
        catalog_after(create(AGENT, "hello", False))
    catalog = catalog_after(create(ADMIN, "hello", False, shared))
    with pytest.raises(Forbidden):
        decide_update(catalog, AGENT, shared, shortcut=None, content="x", personal=None, at=AT)
    with pytest.raises(Forbidden):
        decide_delete(catalog, AGENT, shared, AT)
    # an agent's personal one may not be shared by the agent
    own = uuid.uuid4()
    catalog = catalog_after(create(AGENT, "mine", True, own))
    with pytest.raises(Forbidden):
        decide_update(catalog, AGENT, own, shortcut=None, content=None, personal=False, at=AT)


def test_an_update_records_only_what_differs_and_keeps_shortcuts_unique():
    first, second = uuid.uuid4(), uuid.uuid4()
    catalog = catalog_after(create(ADMIN, "one", False, first), create(ADMIN, "two", False, second))
    assert decide_update(catalog, ADMIN, first, shortcut="/one", content=None, personal=None, at=AT) == []
    with pytest.raises(Conflict):
        decide_update(catalog, ADMIN, first, shortcut="two", content=None, personal=None, at=AT)
    [pending] = decide_update(catalog, ADMIN, first, shortcut="uno", content=None, personal=True, at=AT)
    assert pending.event == ev.CannedResponseUpdated(org_id=ORG, at=AT, response_id=first, personal=True,
                                                     shortcut="uno")
    catalog = catalog_after(create(ADMIN, "one", False, first),
                            lambda c: decide_update(c, ADMIN, first, shortcut="uno", content=None, personal=True,
                                                    at=AT),
                            lambda c: decide_delete(c, ADMIN, first, AT))
    assert catalog.responses == {}
