"""An operator and the team of an organization: memberships with a role and a status, the display name, and
the decisions on them (joining, changing the role, disabling, re-enabling, removing, renaming).

An organization always keeps an active owner: the decisions refuse to demote, disable or remove its last one.
Who decides matters too: only an owner grants, changes or takes away the owner role."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

from msgspec import UNSET, UnsetType

from commands.errors import Conflict, Forbidden, Invalid, NotFound
from commands.principal import RANK, Role
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

ROLES: tuple[Role, ...] = get_args(Role)
Status = Literal["active", "disabled"]
# what an operator chooses to be for the team: `online` (reads as away once inactive), `away`, `offline`
Availability = Literal["online", "away", "offline"]
MAX_DISPLAY_NAME = 100


def outranks(role: str | None, wanted: str) -> bool:
    """Whether `role` may do what `wanted` may: owner ≥ admin ≥ agent (no role: nothing)."""
    return role in RANK and RANK[role] >= RANK[wanted]


def check_role(role: str, field_name: str = "role") -> Role:
    if role not in ROLES:
        raise Invalid(f"the role is one of {', '.join(ROLES)}", field_name)
    return role  # type: ignore[return-value]


def check_display_name(name: str | None) -> str | None:
    """Trimmed; blank clears it."""
    name = (name or "").strip()
    if len(name) > MAX_DISPLAY_NAME:
        raise Invalid(f"the display name has at most {MAX_DISPLAY_NAME} characters", "displayName")
    return name or None


@dataclass
class Membership:
    role: Role
    status: Status = "active"
    availability: Availability = "online"


@dataclass
class Operator(Folded):
    created: ev.OperatorCreated
    display_name: str | None = None
    memberships: dict[uuid.UUID, Membership] = field(default_factory=dict)  # by organization
    password_hash: str = ""  # what checks the operator's password now
    avatar_digest: str | None = None  # the uploaded avatar's; None: generated initials

    @property
    def operator_id(self) -> uuid.UUID:
        return self.stream_id

    def membership(self, org_id: uuid.UUID) -> Membership:
        found = self.memberships.get(org_id)
        if found is None:
            raise NotFound("operator not found")
        return found


def fold_operator(history: list[Recorded]) -> Operator:
    created = history[0].event
    assert isinstance(created, ev.OperatorCreated)
    state = Operator(created.operator_id, history[-1].version, created, created.display_name,
                     {created.org_id: Membership(created.role)}, created.password_hash)
    for recorded in history[1:]:
        event = recorded.event
        if isinstance(event, ev.OperatorOrgAdded):
            state.memberships[event.org_id] = Membership(event.role)
        elif isinstance(event, ev.OperatorOrgRemoved):
            state.memberships.pop(event.org_id, None)
        elif isinstance(event, ev.OperatorRoleChanged) and event.org_id in state.memberships:
            state.memberships[event.org_id].role = event.role
        elif isinstance(event, (ev.OperatorDisabled, ev.OperatorEnabled)) and event.org_id in state.memberships:
            state.memberships[event.org_id].status = "disabled" if isinstance(event, ev.OperatorDisabled) else "active"
        elif isinstance(event, ev.OperatorProfileChanged):
            state.display_name = event.display_name
        elif isinstance(event, ev.OperatorAvailabilityChanged) and event.org_id in state.memberships:
            state.memberships[event.org_id].availability = event.status  # type: ignore[assignment]
        elif isinstance(event, ev.OperatorPasswordChanged):
            state.password_hash = event.password_hash
        elif isinstance(event, ev.OperatorAvatarSet):
            state.avatar_digest = event.digest
        elif isinstance(event, ev.OperatorAvatarRemoved):
            state.avatar_digest = None
    return state


@dataclass
class Team:
    """The operators of one organization, as their streams tell: what a change of one member is decided on."""

    org_id: uuid.UUID
    members: dict[uuid.UUID, Operator]

    def member(self, operator_id: uuid.UUID) -> tuple[Operator, Membership]:
        operator = self.members.get(operator_id)
        if operator is None:
            raise NotFound("operator not found")
        return operator, operator.membership(self.org_id)

    def active_owners(self) -> set[uuid.UUID]:
        return {operator_id for operator_id, operator in self.members.items()
                if (m := operator.memberships.get(self.org_id)) and m.role == "owner" and m.status == "active"}

    def default_role(self) -> Role:
        """The role of an operator created without one: the first of an organization owns it."""
        return "agent" if any(self.org_id in operator.memberships for operator in self.members.values()) else "owner"


def _may_manage(actor_role: str | None, target: Membership, role: str | None = None) -> None:
    """An admin manages admins and agents; the owner role, given or taken, is an owner's to change."""
    if not outranks(actor_role, "admin"):
        raise Forbidden("your role cannot manage operators")
    if "owner" in (target.role, role) and actor_role != "owner":
        raise Forbidden("only an owner can change an owner or make one")


def _keeps_an_owner(team: Team, operator_id: uuid.UUID, what: str) -> None:
    if team.active_owners() == {operator_id}:
        raise Conflict(f"the last owner of the organization cannot be {what}; make another operator owner first")


def decide_change(team: Team, actor_role: str | None, operator_id: uuid.UUID, at: datetime, *,
                  role: Role | None = None, status: Status | None = None,
                  display_name: str | None | UnsetType = UNSET) -> list[Pending]:
    """A manager changes a member's role, status and display name (those given), all or none of them."""
    operator, membership = team.member(operator_id)
    _may_manage(actor_role, membership, role)
    org_id = team.org_id
    changes: list[ev.Event] = []
    if role is not None and role != membership.role:
        changes.append(ev.OperatorRoleChanged(org_id=org_id, at=at, operator_id=operator_id, role=role))
    if status is not None and status != membership.status:
        changed = ev.OperatorDisabled if status == "disabled" else ev.OperatorEnabled
        changes.append(changed(org_id=org_id, at=at, operator_id=operator_id))
    if (role or membership.role, status or membership.status) != ("owner", "active"):
        _keeps_an_owner(team, operator_id, "demoted" if role not in (None, "owner") else "disabled")
    if not isinstance(display_name, UnsetType) and display_name != operator.display_name:
        changes.append(ev.OperatorProfileChanged(org_id=org_id, at=at, operator_id=operator_id,
                                                 display_name=display_name))
    return operator.follow(*changes)


def check_may_manage(team: Team, actor_role: str | None, operator_id: uuid.UUID) -> Operator:
    """The member `operator_id`, if `actor_role` may manage it (an admin hands an owner nothing)."""
    operator, membership = team.member(operator_id)
    _may_manage(actor_role, membership)
    return operator


def decide_remove(team: Team, actor_role: str | None, operator_id: uuid.UUID, at: datetime) -> list[Pending]:
    operator, membership = team.member(operator_id)
    _may_manage(actor_role, membership)
    _keeps_an_owner(team, operator_id, "removed")
    return operator.follow(ev.OperatorOrgRemoved(org_id=team.org_id, at=at, operator_id=operator_id))


def decide_display_name(operator: Operator, org_id: uuid.UUID, display_name: str | None,
                        at: datetime) -> list[Pending]:
    """Recorded in the organization it was changed from; the name is the operator's in every one."""
    if operator.display_name == display_name:
        return []
    return operator.follow(ev.OperatorProfileChanged(org_id=org_id, at=at, operator_id=operator.operator_id,
                                                     display_name=display_name))


def decide_availability(operator: Operator, org_id: uuid.UUID, status: Availability, at: datetime) -> list[Pending]:
    """The availability the operator chooses in `org_id` (nothing new when it is the same)."""
    if operator.membership(org_id).availability == status:
        return []
    return operator.follow(ev.OperatorAvailabilityChanged(org_id=org_id, at=at, operator_id=operator.operator_id,
                                                          status=status))


def decide_join(operator: Operator, org_id: uuid.UUID, role: Role, at: datetime) -> list[Pending]:
    """The operator joins `org_id` (nothing new when it is a member already)."""
    if org_id in operator.memberships:
        return []
    return operator.follow(ev.OperatorOrgAdded(org_id=org_id, at=at, operator_id=operator.operator_id, role=role))


def decide_password(operator: Operator, org_id: uuid.UUID, password_hash: str, at: datetime,
                    kept_token_id: uuid.UUID | None = None) -> list[Pending]:
    """The new password; every other session of the operator ends."""
    return operator.follow(ev.OperatorPasswordChanged(org_id=org_id, at=at, operator_id=operator.operator_id,
                                                      password_hash=password_hash, kept_token_id=kept_token_id))


def decide_avatar(operator: Operator, org_id: uuid.UUID, at: datetime,
                  image: tuple[str, str, bytes] | None) -> list[Pending]:
    """The operator's avatar becomes `image` (media type, digest, bytes), or generated initials for None;
    recorded in the organization it was changed from, like the display name."""
    if image is None:
        if operator.avatar_digest is None:
            return []
        return operator.follow(ev.OperatorAvatarRemoved(org_id=org_id, at=at, operator_id=operator.operator_id))
    media_type, digest, data = image
    if operator.avatar_digest == digest:
        return []
    return operator.follow(ev.OperatorAvatarSet(org_id=org_id, at=at, operator_id=operator.operator_id,
                                                media_type=media_type, digest=digest, image=data))
