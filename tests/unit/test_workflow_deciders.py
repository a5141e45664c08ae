"""The team's workflow decisions (assignment, labels, priority, snooze, teams, labels, read state), from
events folded by hand: no server, no store."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from commands.deciders import conversation, labels, read_state, teams
from commands.errors import Conflict, Invalid, NotFound, PreconditionFailed
from events import types as ev
from tests.unit.test_deciders import AT, ORG, OPERATOR_PRINCIPAL, events, history, started_conversation

ACTOR = OPERATOR_PRINCIPAL.actor
OTHER = uuid.uuid4()


def folded(*more: ev.Event) -> conversation.Conversation:
    created = started_conversation()
    return conversation.fold_conversation(history(created, *(
        type(e)(**{**{f: getattr(e, f) for f in e.__struct_fields__}, "conversation_id": created.conversation_id})
        for e in more)))


def test_assignment_is_recorded_whole_and_only_when_it_changes():
    state = folded()
    assert (state.assignee_id, state.team_id) == (None, None)
    [pending] = conversation.decide_assign(state, ACTOR, AT, assignee_id=OTHER, team_id=None)
    assert pending.version == 2 and (pending.event.assignee_id, pending.event.team_id) == (OTHER, None)
    state = conversation.followed(state, [pending])
    assert state.assignee_id == OTHER and state.version == 2
    assert conversation.decide_assign(state, ACTOR, AT, assignee_id=OTHER, team_id=None) == []
    [unassigned] = events(conversation.decide_assign(state, ACTOR, AT, assignee_id=None, team_id=None))
    assert unassigned.assignee_id is None


def test_if_match_refuses_a_decision_taken_on_an_older_version():
    state = folded(ev.ConversationAssigned(org_id=ORG, at=AT, conversation_id=uuid.uuid4(), assignee_id=OTHER,
                                           team_id=None))
    conversation.check_if_match(state, 2)
    conversation.check_if_match(state, None)
    with pytest.raises(PreconditionFailed):
        conversation.check_if_match(state, 1)


def test_labels_record_what_is_added_and_what_is_removed():
    a, b, c = sorted(uuid.uuid4() for _ in range(3))
    state = folded(ev.ConversationLabelsChanged(org_id=ORG, at=AT, conversation_id=uuid.uuid4(), added=[a, b],
                                                removed=[]))
    assert state.labels == {a, b}
    [change] = events(conversation.decide_labels(state, ACTOR, AT, labels=frozenset({b, c})))
    assert (change.added, change.removed) == ([c], [a])
    assert conversation.decide_labels(state, ACTOR, AT, labels=frozenset({a, b})) == []


def test_priority_is_one_of_five():
    state = folded()
    assert conversation.decide_priority(state, ACTOR, AT, "none") == []
    assert events(conversation.decide_priority(state, ACTOR, AT, "urgent"))[0].priority == "urgent"
    with pytest.raises(Invalid):
        conversation.decide_priority(state, ACTOR, AT, "critical")


def test_snooze_and_the_scheduled_wake_happen_once():
    until = AT + timedelta(hours=1)
    with pytest.raises(Invalid):
        conversation.decide_snooze(folded(), ACTOR, AT, AT - timedelta(seconds=1))
    state = folded(ev.ConversationSnoozed(org_id=ORG, at=AT, conversation_id=uuid.uuid4(), until=until))
    assert state.snoozed and state.snoozed_until == until
    assert conversation.decide_wake(state, None, AT, "time") == []  # not yet
    [woken] = conversation.decide_wake(state, None, until, "time")
    assert woken.event.reason == "time"
    state = conversation.followed(state, [woken])
    assert not state.snoozed and conversation.decide_wake(state, None, until, "time") == []


def test_a_snooze_until_the_visitor_writes_has_no_scheduled_wake():
    state = folded(ev.ConversationSnoozed(org_id=ORG, at=AT, conversation_id=uuid.uuid4(), until=None))
    assert conversation.decide_wake(state, None, AT + timedelta(days=365), "time") == []
    assert events(conversation.decide_wake(state, ACTOR, AT, "operator"))[0].reason == "operator"
    # snoozing again is recorded even when the fold says it is snoozed: a visitor may have woken it
    assert conversation.decide_snooze(state, ACTOR, AT, None)


def test_label_names_are_unique_per_organization_case_aside():
    registry = labels.fold_labels(ORG, [])
    first = uuid.uuid4()
    [created] = labels.decide_create(registry, first, " Billing ", "#aa0000", AT)
    assert created.version == 1 and created.stream_id == labels.labels_stream(ORG)
    assert created.event.name == "Billing"
    registry = labels.fold_labels(ORG, history(created.event))
    with pytest.raises(Conflict):
        labels.decide_create(registry, uuid.uuid4(), "billing", "#00aa00", AT)
    with pytest.raises(Invalid):
        labels.decide_create(registry, uuid.uuid4(), "vip", "red", AT)
    assert labels.decide_change(registry, first, "Billing", "#aa0000", AT) == []
    assert events(labels.decide_change(registry, first, "billing", "#aa0000", AT))[0].name == "billing"
    with pytest.raises(NotFound):
        labels.decide_delete(registry, uuid.uuid4(), AT)
    assert labels.label_ids(registry, ["BILLING"]) == {first}
    with pytest.raises(Invalid):
        labels.label_ids(registry, ["nope"])
    deleted = labels.fold_labels(ORG, history(created.event, *events(labels.decide_delete(registry, first, AT))))
    assert deleted.labels == {} and deleted.version == 2


def test_labels_of_another_organization_are_not_found():
    registry = labels.fold_labels(ORG, [])
    assert labels.labels_stream(ORG) != labels.labels_stream(uuid.uuid4())
    with pytest.raises(NotFound):
        registry.found(uuid.uuid4())


def test_teams_hold_operators_of_the_organization_only():
    registry = teams.fold_teams(ORG, [])
    team_id, member = uuid.uuid4(), uuid.uuid4()
    with pytest.raises(Invalid):
        teams.decide_create(registry, team_id, "Support", [member, OTHER], frozenset({member}), AT)
    with pytest.raises(Invalid):
        teams.decide_create(registry, team_id, "  ", [], frozenset(), AT)
    [created] = events(teams.decide_create(registry, team_id, "Support", [member, member], frozenset({member}), AT))
    assert created.member_ids == [member]
    registry = teams.fold_teams(ORG, history(created))
    assert teams.decide_change(registry, team_id, "Support", [member], frozenset({member}), AT) == []
    renamed, members = events(teams.decide_change(registry, team_id, "Sales", [], frozenset({member}), AT))
    assert renamed.name == "Sales" and members.member_ids == []
    registry = teams.fold_teams(ORG, history(created, renamed, members))
    assert registry.teams[team_id] == teams.Team(team_id, "Sales", ())
    [deleted] = events(teams.decide_delete(registry, team_id, AT))
    assert teams.fold_teams(ORG, history(created, deleted)).teams == {}
    with pytest.raises(NotFound):
        teams.decide_delete(registry, uuid.uuid4(), AT)


def test_an_operators_read_mark_only_moves_forward():
    conversation_id, message_id = uuid.uuid4(), uuid.uuid4()
    state = read_state.fold_read_state(ORG, OTHER, conversation_id, [])
    [read] = read_state.decide_read(state, message_id, AT, AT)
    assert read.stream_id == read_state.read_state_stream(OTHER, conversation_id) and read.version == 1
    state = read_state.fold_read_state(ORG, OTHER, conversation_id, history(read.event))
    assert read_state.decide_read(state, message_id, AT, AT) == []
    assert read_state.decide_read(state, uuid.uuid4(), AT - timedelta(seconds=1), AT) == []
    assert read_state.decide_read(state, uuid.uuid4(), AT + timedelta(seconds=1), AT)
