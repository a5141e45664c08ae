"""The team's workflow over HTTP: teams and labels (409, roles, isolation), assigning, labelling, priority
and snooze through PATCH /api/conversations/{id} with its ETag and If-Match (412), the list's and the
inbox's filters, tabs and counts, per-operator unread, and many operators changing the same conversations
at once (no lost update)."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from commands.deciders.conversation import fold_conversation
from tests.integration.test_resources import create_conversation, create_customer, post_message
from tests.support.visitors import EventStream


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    return response.json()


@pytest.fixture
def conversation(http, tenant) -> dict:
    customer = create_customer(http, tenant, email="triage@example.com", nickname="Tri Age")
    return create_conversation(http, tenant, customer["_id"])


def label(http, tenant, name, color="#aa0000") -> dict:
    return ok(http.post("/api/labels", headers=tenant.operator, json={"name": name, "color": color}))


def patch(http, headers, conversation_id, body, if_match=None) -> httpx.Response:
    extra = {"If-Match": if_match} if if_match is not None else {}
    return http.patch(f"/api/conversations/{conversation_id}", headers={**headers, **extra}, json=body)


def get(http, headers, conversation_id) -> httpx.Response:
    return http.get(f"/api/conversations/{conversation_id}", headers=headers)


def test_labels_are_unique_per_organization_admin_only_and_isolated(http, tenant, other_tenant):
    billing = label(http, tenant, "Billing")
    assert billing["name"] == "Billing" and billing["color"] == "#aa0000"
    problem(http.post("/api/labels", headers=tenant.operator, json={"name": "billing"}), 409)
    problem(http.post("/api/labels", headers=tenant.operator, json={"name": "vip", "color": "red"}), 400)
    label(http, other_tenant, "billing")  # another organization's name space
    agent = tenant.add_operator("agent")
    problem(http.post("/api/labels", headers=agent.headers, json={"name": "refund"}), 403)
    assert [l["name"] for l in ok(http.get("/api/labels", headers=agent.headers))] == ["Billing"]
    # another organization's label is not found, and stays as it was
    problem(http.put(f"/api/labels/{billing['_id']}", headers=other_tenant.operator,
                     json={"name": "stolen", "color": "#000000"}), 404)
    problem(http.delete(f"/api/labels/{billing['_id']}", headers=other_tenant.operator), 404)
    renamed = ok(http.put(f"/api/labels/{billing['_id']}", headers=tenant.operator,
                          json={"name": "Invoices", "color": "#00aa00"}))
    assert (renamed["name"], renamed["color"]) == ("Invoices", "#00aa00")
    assert http.delete(f"/api/labels/{billing['_id']}", headers=tenant.operator).status_code == 204
    assert ok(http.get("/api/labels", headers=tenant.operator)) == []


def test_teams_hold_the_organizations_operators_admin_only_and_isolated(http, tenant, other_tenant):
    agent = tenant.add_operator("agent")
    stranger = other_tenant.add_operator("agent")
    problem(http.post("/api/teams", headers=tenant.operator, json={"name": "Support",
                                                                  "memberIds": [str(stranger.id)]}), 400)
    problem(http.post("/api/teams", headers=agent.headers, json={"name": "Support"}), 403)
    team = ok(http.post("/api/teams", headers=tenant.operator, json={"name": "Support", "memberIds": [str(agent.id)]}))
    assert team["memberIds"] == [str(agent.id)]
    problem(http.put(f"/api/teams/{team['_id']}", headers=other_tenant.operator, json={"name": "x"}), 404)
    changed = ok(http.put(f"/api/teams/{team['_id']}", headers=tenant.operator, json={"name": "Tier 1", "memberIds": []}))
    assert (changed["name"], changed["memberIds"]) == ("Tier 1", [])
    assert [t["name"] for t in ok(http.get("/api/teams", headers=agent.headers))] == ["Tier 1"]
    assert ok(http.get("/api/teams", headers=other_tenant.operator)) == []
    assert http.delete(f"/api/teams/{team['_id']}", headers=tenant.operator).status_code == 204
    assert ok(http.get("/api/teams", headers=tenant.operator)) == []


def test_patch_sets_the_workflow_and_a_stale_if_match_changes_nothing(http, tenant, other_tenant, conversation):
    cid = conversation["_id"]
    label(http, tenant, "refund")
    label(http, tenant, "vip", "#0000aa")
    team = ok(http.post("/api/teams", headers=tenant.operator, json={"name": "Billing"}))
    agent = tenant.add_operator("agent")
    read = get(http, tenant.operator, cid)
    assert read.json()["assigneeId"] is None and read.json()["labels"] == [] and read.json()["priority"] == "none"
    etag = read.headers["ETag"]
    changed = patch(http, agent.headers, cid, {"assigneeId": str(agent.id), "teamId": team["_id"],
                                               "labels": ["VIP", "refund"], "priority": "high"}, if_match=etag)
    body = ok(changed)
    assert (body["assigneeId"], body["teamId"], body["labels"], body["priority"]) == (
        str(agent.id), team["_id"], ["refund", "vip"], "high")
    assert changed.headers["ETag"] != etag
    # the same If-Match again: the conversation moved on, so 412 and nothing changes
    problem(patch(http, tenant.operator, cid, {"assigneeId": None, "priority": "low"}, if_match=etag), 412)
    problem(patch(http, tenant.operator, cid, {"priority": "low"}, if_match='"nonsense"'), 412)
    again = get(http, tenant.operator, cid)
    assert (again.json()["assigneeId"], again.json()["priority"]) == (str(agent.id), "high")
    assert again.headers["ETag"] == changed.headers["ETag"]
    # bad input: a structured error, and nothing stored
    problem(patch(http, tenant.operator, cid, {"priority": "critical"}), 400)
    problem(patch(http, tenant.operator, cid, {"labels": ["no such label"]}), 400)
    problem(patch(http, tenant.operator, cid, {"assigneeId": str(uuid.uuid4())}), 400)
    other_team = ok(http.post("/api/teams", headers=other_tenant.operator, json={"name": "Theirs"}))
    problem(patch(http, tenant.operator, cid, {"teamId": other_team["_id"]}), 400)
    other_agent = other_tenant.add_operator("agent")
    problem(patch(http, tenant.operator, cid, {"assigneeId": str(other_agent.id)}), 400)
    assert get(http, tenant.operator, cid).headers["ETag"] == changed.headers["ETag"]
    # another organization cannot see or change the conversation
    problem(patch(http, other_tenant.operator, cid, {"priority": "low"}), 404)
    problem(get(http, other_tenant.operator, cid), 404)
    # add and remove without reading first; unassign
    body = ok(patch(http, tenant.operator, cid, {"removeLabels": ["vip"], "addLabels": ["refund"], "assigneeId": None}))
    assert (body["labels"], body["assigneeId"], body["teamId"]) == (["refund"], None, team["_id"])


def test_two_operators_assigning_to_themselves_at_once_one_wins(http, tenant, conversation):
    cid = conversation["_id"]
    first, second = tenant.add_operator("agent"), tenant.add_operator("agent")
    etag = get(http, tenant.operator, cid).headers["ETag"]
    barrier = threading.Barrier(2)
    answers: dict[str, httpx.Response] = {}

    def assign_to_self(who) -> None:
        with tenant.server.client() as client:
            barrier.wait()
            answers[str(who.id)] = patch(client, who.headers, cid, {"assigneeId": str(who.id)}, if_match=etag)

    threads = [threading.Thread(target=assign_to_self, args=(who,)) for who in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(response.status_code for response in answers.values())
    assert statuses == [200, 412], {k: v.text for k, v in answers.items()}
    winner = next(who for who, response in answers.items() if response.status_code == 200)
    assert get(http, tenant.operator, cid).json()["assigneeId"] == winner


def test_filters_and_inbox_tabs_mine_unassigned_and_label_counts(http, tenant, other_tenant):
    customer = create_customer(http, tenant, email="filters@example.com")
    a, b, c = (create_conversation(http, tenant, customer["_id"])["_id"] for _ in range(3))
    refund, vip = label(http, tenant, "refund"), label(http, tenant, "vip")
    team = ok(http.post("/api/teams", headers=tenant.operator, json={"name": "Billing"}))
    me = ok(http.get("/api/operators/me", headers=tenant.operator))["_id"]
    ok(patch(http, tenant.operator, a, {"assigneeId": me, "labels": ["refund", "vip"], "priority": "urgent"}))
    ok(patch(http, tenant.operator, b, {"teamId": team["_id"], "labels": ["refund"]}))
    post_message(http, tenant, c, "Hello, my parcel never came.\nIt was order 42.")

    def listed(**params) -> set[str]:
        return {x["_id"] for x in ok(http.get("/api/conversations", headers=tenant.operator, params=params))}

    assert listed(assigneeId=me) == {a}
    assert listed(teamId=team["_id"]) == {b}
    assert listed(labels="refund") == {a, b}
    assert listed(labels="refund,VIP") == {a}
    assert listed(labels="refund,nothing") == set()
    assert listed(priority="urgent") == {a}
    problem(http.get("/api/conversations", headers=tenant.operator, params={"assigneeId": "me"}), 400)
    # another organization's filters find nothing of ours
    assert {x["_id"] for x in ok(http.get("/api/conversations", headers=other_tenant.operator,
                                          params={"labels": "refund"}))} == set()

    def inbox(**params) -> dict:
        return ok(http.get("/api/conversations", headers=tenant.operator,
                           params={"websiteId": str(tenant.website_id), **params}))

    page = inbox(inboxFilter="mine")
    assert [x["_id"] for x in page["conversations"]] == [a]
    assert (page["counts"]["mine"], page["counts"]["unassigned"], page["filteredTotal"]) == (1, 2, 1)
    assert {x["_id"] for x in inbox(inboxFilter="unassigned")["conversations"]} == {b, c}
    assert {x["name"]: x["count"] for x in page["labelCounts"]} == {"refund": 2, "vip": 1}
    assert {x["name"]: x["count"] for x in page["teamCounts"]} == {"Billing": 1}
    assert [x["_id"] for x in inbox(inboxFilter="all", labels="vip")["conversations"]] == [a]
    assert [x["_id"] for x in inbox(inboxFilter="all", teamId=team["_id"])["conversations"]] == [b]
    row = next(x for x in inbox(inboxFilter="all")["conversations"] if x["_id"] == c)
    assert row["lastMessage"]["from"] == "customer" and row["lastMessage"]["preview"].startswith("Hello, my parcel")
    assert row["waitingSince"] is not None and row["unread"] is True
    assert refund["_id"] and vip["_id"]


def test_unread_is_each_operators_own(http, tenant, conversation):
    cid = conversation["_id"]
    colleague = tenant.add_operator("agent")
    message = post_message(http, tenant, cid, "Are you there?")

    def unread(headers) -> bool:
        page = ok(http.get("/api/conversations", headers=headers, params={
            "websiteId": str(tenant.website_id), "inboxFilter": "all"}))
        return next(x for x in page["conversations"] if x["_id"] == cid)["unread"]

    assert unread(tenant.operator) and unread(colleague.headers)
    ok(http.post(f"/api/messages/{message['_id']}/read", headers=tenant.operator))
    assert not unread(tenant.operator)
    assert unread(colleague.headers)  # still unread for the colleague, who has not read it
    page = ok(http.get("/api/conversations", headers=colleague.headers, params={
        "websiteId": str(tenant.website_id), "inboxFilter": "unread"}))
    assert cid in {x["_id"] for x in page["conversations"]} and page["counts"]["unread"] >= 1


def test_a_snoozed_conversation_leaves_the_open_views_and_the_visitor_wakes_it(http, tenant, conversation):
    cid = conversation["_id"]
    post_message(http, tenant, cid, "first")

    def tab(name) -> set[str]:
        page = ok(http.get("/api/conversations", headers=tenant.operator, params={
            "websiteId": str(tenant.website_id), "inboxFilter": name}))
        return {x["_id"] for x in page["conversations"]}

    until = (datetime.now(timezone.utc) + timedelta(hours=2)).isoformat()
    body = ok(patch(http, tenant.operator, cid, {"snoozedUntil": until}))
    assert body["snoozed"] and body["snoozedUntil"] is not None
    assert cid not in tab("unresolved") and cid not in tab("unassigned") and cid in tab("snoozed")
    problem(patch(http, tenant.operator, cid, {"snoozedUntil": "2001-01-01T00:00:00Z"}), 400)
    post_message(http, tenant, cid, "any news?")  # the visitor writes: it is back
    assert cid in tab("unresolved") and cid not in tab("snoozed")
    body = ok(patch(http, tenant.operator, cid, {"snoozed": True}))  # until the visitor writes
    assert body["snoozed"] and body["snoozedUntil"] is None
    body = ok(patch(http, tenant.operator, cid, {"snoozed": False}))
    assert not body["snoozed"] and cid in tab("unresolved")


def test_twenty_operators_changing_the_same_conversations_lose_no_update(http, tenant):
    customer = create_customer(http, tenant, email="crowd@example.com")
    conversations = [create_conversation(http, tenant, customer["_id"])["_id"] for _ in range(3)]
    names = [f"l{i}" for i in range(20)]
    for name in names:
        label(http, tenant, name)
    operators = [tenant.add_operator("agent") for _ in range(20)]
    barrier = threading.Barrier(len(operators))
    outcomes: list[tuple[int, int]] = []

    def work(i: int, who) -> None:
        with tenant.server.client() as client:
            barrier.wait()
            for cid in conversations:
                for body in ({"addLabels": [names[i]]}, {"assigneeId": str(who.id)},
                             {"resolved": i % 2 == 0}, {"priority": ("low", "high")[i % 2]}):
                    response = patch(client, who.headers, cid, body)
                    outcomes.append((i, response.status_code))

    threads = [threading.Thread(target=work, args=(i, who)) for i, who in enumerate(operators)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {status for _, status in outcomes} == {200}
    store = tenant.server.store()
    try:
        for cid in conversations:
            folded = fold_conversation(store.load(uuid.UUID(cid)))
            shown = ok(http.get(f"/api/conversations/{cid}", headers=tenant.operator))
            # every label added by someone is there: no addition lost to a concurrent one
            assert shown["labels"] == sorted(names) and len(folded.labels) == 20
            assert (shown["assigneeId"], shown["resolved"], shown["priority"]) == (
                str(folded.assignee_id), folded.resolved, folded.priority)
            assert shown["assigneeId"] in {str(o.id) for o in operators}
    finally:
        store.close()


def test_every_open_dashboard_is_pushed_the_workflows_changes(server, http, tenant, conversation):
    cid = conversation["_id"]
    refund = label(http, tenant, "refund")
    colleague = tenant.add_operator("agent")
    until = (datetime.now(timezone.utc) + timedelta(hours=1)).replace(microsecond=0)
    with EventStream(server.base_url, "/api/realtime", colleague.headers) as stream:
        for change in ({"assigneeId": str(colleague.id)}, {"addLabels": ["refund"]}, {"priority": "high"},
                       {"snoozedUntil": until.isoformat()}, {"snoozed": False}, {"assigneeId": None}):
            ok(patch(http, tenant.operator, cid, change))
        pushed = stream.until(lambda p: p.event == "conversation.updated" and p.data.get("assigneeId", 0) is None)
    changes = [p.data for p in pushed if p.event == "conversation.updated"]
    assert changes == [
        {"conversationId": cid, "assigneeId": str(colleague.id), "teamId": None},
        {"conversationId": cid, "labelsAdded": [refund["_id"]], "labelsRemoved": []},
        {"conversationId": cid, "priority": "high"},
        {"conversationId": cid, "snoozed": True, "snoozedUntil": until.isoformat().replace("+00:00", "Z")},
        {"conversationId": cid, "snoozed": False, "snoozedUntil": None},
        {"conversationId": cid, "assigneeId": None, "teamId": None}]
