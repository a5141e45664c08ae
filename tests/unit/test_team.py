"""Roles: an operator's memberships folded from its stream, and the team's decisions (who may change whom,
the last owner kept). No server, no store."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import msgspec
import pytest

from commands.deciders.operator import (Team, decide_availability, decide_change, decide_join, decide_remove,
                                        fold_operator)
from commands.errors import Conflict, Forbidden, NotFound
from commands.principal import Principal
from events import types as ev
from events.store import Recorded, decode_event, encode_event

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
ORG, OTHER_ORG = uuid.uuid4(), uuid.uuid4()


def operator(role: str, *later: ev.Event, org: uuid.UUID = ORG):
    operator_id = uuid.uuid4()
    events = [ev.OperatorCreated(org_id=org, at=AT, operator_id=operator_id, email=f"{operator_id.hex[:8]}@x.io",
                                 password_hash="h", role=role), *later]
    return fold_operator([Recorded(i, operator_id, i, e) for i, e in enumerate(events, start=1)])


def team(*members) -> Team:
    return Team(ORG, {m.operator_id: m for m in members})


def kinds(pending) -> list[str]:
    return [type(p.event).__name__ for p in pending]


def test_an_operator_created_before_roles_reads_as_an_owner():
    stored = encode_event(ev.OperatorCreated(org_id=ORG, at=AT, operator_id=uuid.uuid4(), email="a@x.io",
                                             password_hash="h"))
    legacy = msgspec.json.decode(stored)
    del legacy["role"], legacy["display_name"]
    assert decode_event(msgspec.json.encode(legacy)).role == "owner"
    joined = msgspec.json.encode({"type": "OperatorOrgAdded", "org_id": str(ORG), "at": AT.isoformat(),
                                  "operator_id": str(uuid.uuid4())})
    assert decode_event(joined).role == "owner"


def test_the_fold_keeps_a_role_and_status_per_organization():
    op = operator("owner")
    oid = op.operator_id
    op = fold_operator([Recorded(1, oid, 1, op.created),
                        Recorded(2, oid, 2, ev.OperatorOrgAdded(org_id=OTHER_ORG, at=AT, operator_id=oid, role="agent")),
                        Recorded(3, oid, 3, ev.OperatorDisabled(org_id=ORG, at=AT, operator_id=oid)),
                        Recorded(4, oid, 4, ev.OperatorRoleChanged(org_id=OTHER_ORG, at=AT, operator_id=oid,
                                                                    role="admin")),
                        Recorded(5, oid, 5, ev.OperatorProfileChanged(org_id=ORG, at=AT, operator_id=oid,
                                                                       display_name="Ada"))])
    assert (op.memberships[ORG].role, op.memberships[ORG].status) == ("owner", "disabled")
    assert (op.memberships[OTHER_ORG].role, op.memberships[OTHER_ORG].status) == ("admin", "active")
    assert op.display_name == "Ada" and op.version == 5


def test_roles_rank_owner_over_admin_over_agent():
    def of(role):
        return Principal("operator", ORG, uuid.uuid4(), role=role)
    assert of("owner").has_role("admin") and of("admin").has_role("admin") and of("admin").has_role("agent")
    assert not of("agent").has_role("admin") and not of("admin").has_role("owner")
    assert not Principal("apikey", ORG, uuid.uuid4()).has_role("agent")


def test_the_first_operator_of_an_organization_owns_it():
    assert team().default_role() == "owner"
    assert team(operator("owner")).default_role() == "agent"


def test_the_last_owner_cannot_be_demoted_disabled_or_removed():
    owner, admin = operator("owner"), operator("admin")
    crew = team(owner, admin)
    with pytest.raises(Conflict, match="last owner"):
        decide_change(crew, "owner", owner.operator_id, AT, role="admin")
    with pytest.raises(Conflict, match="last owner"):
        decide_change(crew, "owner", owner.operator_id, AT, status="disabled")
    with pytest.raises(Conflict, match="last owner"):
        decide_remove(crew, "owner", owner.operator_id, AT)
    # a second owner (a disabled one does not count) lets the first go
    disabled_owner = operator("owner", org=ORG)
    disabled_owner.memberships[ORG].status = "disabled"
    with pytest.raises(Conflict):
        decide_remove(team(owner, disabled_owner), "owner", owner.operator_id, AT)
    second = operator("owner")
    assert kinds(decide_change(team(owner, second), "owner", owner.operator_id, AT, role="agent")) == [
        "OperatorRoleChanged"]
    assert kinds(decide_remove(team(owner, second), "owner", owner.operator_id, AT)) == ["OperatorOrgRemoved"]


def test_an_admin_manages_admins_and_agents_but_not_the_owner_role():
    owner, admin, agent = operator("owner"), operator("admin"), operator("agent")
    crew = team(owner, admin, agent)
    assert kinds(decide_change(crew, "admin", agent.operator_id, AT, role="admin", status="disabled",
                               display_name="Bo")) == ["OperatorRoleChanged", "OperatorDisabled",
                                                       "OperatorProfileChanged"]
    with pytest.raises(Forbidden):
        decide_change(crew, "admin", agent.operator_id, AT, role="owner")
    with pytest.raises(Forbidden):
        decide_change(crew, "admin", owner.operator_id, AT, status="disabled")
    with pytest.raises(Forbidden):
        decide_remove(crew, "admin", owner.operator_id, AT)
    with pytest.raises(Forbidden):
        decide_change(crew, "agent", admin.operator_id, AT, status="disabled")
    assert kinds(decide_change(crew, "owner", agent.operator_id, AT, role="owner")) == ["OperatorRoleChanged"]


def test_a_change_follows_the_stream_and_repeating_it_changes_nothing():
    agent = operator("agent")
    pending = decide_change(team(operator("owner"), agent), "owner", agent.operator_id, AT, status="disabled")
    assert [(p.stream_id, p.version) for p in pending] == [(agent.operator_id, 2)]
    agent.memberships[ORG].status = "disabled"
    assert decide_change(team(operator("owner"), agent), "owner", agent.operator_id, AT, status="disabled") == []
    assert kinds(decide_change(team(operator("owner"), agent), "owner", agent.operator_id, AT,
                               status="active")) == ["OperatorEnabled"]


def test_someone_outside_the_team_is_not_found():
    with pytest.raises(NotFound):
        decide_change(team(operator("owner")), "owner", uuid.uuid4(), AT, role="agent")
    stranger = operator("owner", org=OTHER_ORG)
    with pytest.raises(NotFound):
        decide_remove(Team(ORG, {stranger.operator_id: stranger}), "owner", stranger.operator_id, AT)


def test_joining_an_organization_twice_changes_nothing():
    op = operator("owner")
    assert kinds(decide_join(op, OTHER_ORG, "agent", AT)) == ["OperatorOrgAdded"]
    assert decide_join(op, ORG, "agent", AT) == []


def test_availability_is_chosen_per_organization_and_the_same_choice_appends_nothing():
    member = operator("agent")
    assert member.membership(ORG).availability == "online"  # until the operator chooses otherwise
    assert decide_availability(member, ORG, "online", AT) == []
    chosen = decide_availability(member, ORG, "away", AT)
    assert kinds(chosen) == ["OperatorAvailabilityChanged"] and chosen[0].event.status == "away"
    away = operator("agent", ev.OperatorOrgAdded(org_id=OTHER_ORG, at=AT, operator_id=uuid.uuid4()),
                    ev.OperatorAvailabilityChanged(org_id=OTHER_ORG, at=AT, operator_id=uuid.uuid4(), status="away"))
    assert (away.membership(ORG).availability, away.membership(OTHER_ORG).availability) == ("online", "away")
    with pytest.raises(NotFound):
        decide_availability(member, OTHER_ORG, "away", AT)
