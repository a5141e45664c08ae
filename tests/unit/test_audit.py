"""The audit log's rules (projections/audit.py), without a database: every event type is either audited
or named as not, and what an entry shows of an event is its allow-list, the rest masked."""

import uuid
from datetime import datetime, timezone

from events import types as ev
from projections.audit import AUDITED, MASK, NOT_AUDITED, actor_of, changes_between, recorded_values

ORG, AT = uuid.uuid4(), datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_every_event_type_is_audited_or_named_as_not():
    """A new event type fails here until it gets its line in AUDITED or NOT_AUDITED."""
    undecided = [t.__name__ for t in ev.EVENT_TYPES if (t in AUDITED) == (t in NOT_AUDITED)]
    assert not undecided
    for event_type, rule in AUDITED.items():
        assert rule.id_field in event_type.__struct_fields__, event_type.__name__
        assert rule.action.startswith(rule.subject + "."), rule.action


def test_a_field_outside_the_allow_list_shows_masked_and_its_change_still_shows():
    hook = uuid.uuid4()
    created = ev.WebhookSubscribed(org_id=ORG, at=AT, subscription_id=hook, website_id=uuid.uuid4(),
                                   url="https://example.com/t0ken", events=[], secret="whsec_canary")
    state = recorded_values(created, AUDITED[ev.WebhookSubscribed])
    assert "whsec_canary" not in repr(state) and "t0ken" not in repr(state)
    changes = changes_between({}, state)
    assert changes["secret"] == {"before": None, "after": MASK} and changes["url"] == {"before": None, "after": MASK}
    moved = ev.WebhookUpdated(org_id=ORG, at=AT, subscription_id=hook, url="https://example.com/other")
    after = {**state, **recorded_values(moved, AUDITED[ev.WebhookUpdated])}
    assert changes_between(state, after) == {"url": {"before": MASK, "after": MASK}}
    same = ev.WebhookUpdated(org_id=ORG, at=AT, subscription_id=hook, url="https://example.com/t0ken", events=["x"])
    assert changes_between(state, {**state, **recorded_values(same, AUDITED[ev.WebhookUpdated])}) == {
        "events": {"before": [], "after": ["x"]}}


def test_the_actor_is_the_origin_else_what_the_rule_says():
    operator, key = uuid.uuid4(), uuid.uuid4()
    issued = ev.OperatorTokenIssued(org_id=ORG, at=AT, token_id=uuid.uuid4(), operator_id=operator, token_hash="h")
    assert actor_of(issued, AUDITED[ev.OperatorTokenIssued]) == ("operator", operator, None)
    disabled = ev.WebhookDisabled(org_id=ORG, at=AT, subscription_id=uuid.uuid4(), reason="20 failures")
    assert actor_of(disabled, AUDITED[ev.WebhookDisabled]) == ("system", None, None)
    by_key = ev.WebhookDisabled(org_id=ORG, at=AT, subscription_id=uuid.uuid4(), reason="off",
                                origin=ev.Origin("apikey", key, key, "10.0.0.1"))
    assert actor_of(by_key, AUDITED[ev.WebhookDisabled]) == ("apikey", key, "10.0.0.1")
    removed = ev.AgentRemoved(org_id=ORG, at=AT, website_id=uuid.uuid4())
    assert actor_of(removed, AUDITED[ev.AgentRemoved]) == (None, None, None)
