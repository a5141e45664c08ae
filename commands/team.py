"""An organization's team as its admins and owners manage it (`PATCH`/`DELETE /api/operators/{id}`), and
an operator's own profile (`PATCH /api/operators/me`) and availability (`PUT /api/operators/me/availability`)."""

from __future__ import annotations

import uuid
from typing import Annotated, Callable, Iterable, Literal

import msgspec
from msgspec import UNSET, UnsetType

from commands.admin import Created
from commands.deciders.operator import (MAX_DISPLAY_NAME, Availability, Team, check_display_name, check_role,
                                        decide_availability, decide_change, decide_display_name, decide_remove,
                                        fold_operator)
from commands.errors import NotFound
from commands.principal import Principal
from commands.streams import execute, now
from events import types as ev
from events.store import EventStore, Pending

DisplayName = Annotated[str, msgspec.Meta(max_length=MAX_DISPLAY_NAME)] | None


class OperatorChange(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    role: str | UnsetType = UNSET
    status: Literal["active", "disabled"] | UnsetType = UNSET
    display_name: DisplayName | UnsetType = UNSET


class AvailabilityChange(msgspec.Struct, forbid_unknown_fields=True):
    status: Availability


class ProfileChange(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    display_name: DisplayName | UnsetType = UNSET


def load_team(store: EventStore, org_id: uuid.UUID, member_ids: Iterable[uuid.UUID]) -> Team:
    """The members among `member_ids` (the read model's list of the organization's operators), each folded
    from its stream: the read model names whom to load, the store tells what they are. A member the read
    model does not list yet only makes the last-owner rule stricter. The store orders one stream at a
    time, so two changes of two different members at the same instant are each decided on the other's
    former state: the rule holds for changes made one after the other."""
    members = {}
    for operator_id in set(member_ids):
        history = store.load(operator_id)
        if history and isinstance(history[0].event, ev.OperatorCreated):
            operator = fold_operator(history)
            if org_id in operator.memberships:
                members[operator_id] = operator
    return Team(org_id, members)


def _decide(store: EventStore, principal: Principal, operator_id: uuid.UUID | None,
            member_ids: Iterable[uuid.UUID], decide: Callable[[Team], list[Pending]]) -> Created:
    if operator_id is None:
        raise NotFound("operator not found")
    candidates = {*member_ids, operator_id}
    appended = execute(store, principal.org_id, lambda: load_team(store, principal.org_id, candidates), decide)
    return Created(operator_id, appended.position)


def change_operator(store: EventStore, principal: Principal, operator_id: uuid.UUID | None, body: OperatorChange,
                    member_ids: Iterable[uuid.UUID]) -> Created:
    """The role, status and display name given, all or none of them."""
    role = None if isinstance(body.role, UnsetType) else check_role(body.role)
    status = None if isinstance(body.status, UnsetType) else body.status
    name = body.display_name if isinstance(body.display_name, UnsetType) else check_display_name(body.display_name)
    return _decide(store, principal, operator_id, member_ids, lambda team: decide_change(
        team, principal.role, operator_id, now(), role=role, status=status, display_name=name))


def remove_operator(store: EventStore, principal: Principal, operator_id: uuid.UUID | None,
                    member_ids: Iterable[uuid.UUID]) -> Created:
    """The operator leaves the organization: its sessions there end, what it did stays."""
    return _decide(store, principal, operator_id, member_ids,
                   lambda team: decide_remove(team, principal.role, operator_id, now()))


def change_profile(store: EventStore, principal: Principal, body: ProfileChange) -> Created:
    """The signed-in operator's own profile (any role)."""
    operator_id = principal.operator_id
    assert operator_id is not None, "an operator's credential"
    if isinstance(body.display_name, UnsetType):
        return Created(operator_id, store.org_position(principal.org_id))
    name = check_display_name(body.display_name)
    appended = execute(store, principal.org_id, lambda: fold_operator(store.load(operator_id)),
                       lambda operator: decide_display_name(operator, principal.org_id, name, now()))
    return Created(operator_id, appended.position)


def set_availability(store: EventStore, principal: Principal, body: AvailabilityChange) -> Created:
    """The signed-in operator's own availability in the token's organization (any role)."""
    operator_id = principal.operator_id
    assert operator_id is not None, "an operator's credential"
    appended = execute(store, principal.org_id, lambda: fold_operator(store.load(operator_id)),
                       lambda operator: decide_availability(operator, principal.org_id, body.status, now()))
    return Created(operator_id, appended.position)
