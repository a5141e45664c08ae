"""Automatic assignment (`PUT /api/websites/{websiteName}/assignment`): new conversations spread evenly over
the online operators (round-robin), never above each one's capacity, none to an operator who went away,
each assigned once; a reply takes an unassigned conversation when the website says so."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import psycopg

from commands.assignment import assign_if_unassigned

from tests.support.inbox_seed import Seeder
from tests.support.servers import Colleague, Tenant, make_tenant
from tests.support.visitors import Chatting


def assignment(tenant: Tenant) -> str:
    return f"/api/websites/{tenant.website_name}/assignment"


def online(http, *operators: Colleague) -> None:
    for operator in operators:
        answer = http.put("/api/operators/me/availability", headers=operator.headers, json={"status": "online"})
        assert answer.json()["status"] == "online", answer.text


def assignees(server, conversation_ids: list[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID | None]:
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        return dict(conn.execute("SELECT id, assignee_id FROM rm_conversations WHERE id = ANY(%s)",
                                 (conversation_ids,)).fetchall())


def assigned_events(server, conversation_ids: list[uuid.UUID]) -> Counter:
    """How many `ConversationAssigned` each conversation's stream holds."""
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        rows = conn.execute("SELECT originator_id, count(*) FROM parley_events WHERE topic = 'ConversationAssigned' "
                            "AND originator_id = ANY(%s) GROUP BY originator_id", (conversation_ids,)).fetchall()
    return Counter(dict(rows))


def wait_assigned(server, conversation_ids: list[uuid.UUID], expected: int, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        found = assignees(server, conversation_ids)
        if sum(1 for a in found.values() if a is not None) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_thousand_new_conversations_go_round_robin_within_one_of_even_and_once_each(http, server, tenant):
    team = [tenant.add_operator("agent") for _ in range(5)]
    online(http, *team)
    set_up = http.put(assignment(tenant), headers=tenant.operator, json={"mode": "round-robin", "capacity": 1000})
    assert set_up.status_code == 200, set_up.text
    assert set_up.json() == {"websiteId": str(tenant.website_id), "mode": "round-robin", "capacity": 1000,
                             "teamId": None, "assignOnReply": False}
    seeder = Seeder(server, tenant.org_id, tenant.website_id)
    conversations = [c for _ in range(10) for c in seeder.conversations(100)]
    found = wait_assigned(server, conversations, 1000)
    counts = Counter(found.values())
    assert None not in counts, f"{counts[None]} of 1000 left unassigned"
    assert set(counts) == {o.id for o in team}
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    assert set(assigned_events(server, conversations).values()) == {1}  # exactly once each


def test_nobody_gets_more_than_the_capacity_and_the_rest_wait_for_room(http, server, tenant):
    team = [tenant.add_operator("agent") for _ in range(5)]
    online(http, *team)
    http.put(assignment(tenant), headers=tenant.operator, json={"mode": "least-busy", "capacity": 3})
    seeder = Seeder(server, tenant.org_id, tenant.website_id, tenant.operator)
    conversations = seeder.conversations(20)
    found = wait_assigned(server, conversations, 15)
    time.sleep(1.5)  # the assigner tries again every second: still nobody with room
    found = assignees(server, conversations)
    counts = Counter(a for a in found.values() if a is not None)
    assert sorted(counts.values()) == [3] * 5 and list(found.values()).count(None) == 5
    # resolving one frees room: a waiting conversation goes to that operator
    freed = next(c for c, a in found.items() if a == team[0].id)
    seeder.flags(freed, resolved=True)
    after = wait_assigned(server, conversations, 16, timeout=30)
    assert Counter(a for c, a in after.items() if a is not None and c != freed)[team[0].id] == 3
    assert list(after.values()).count(None) == 4


def test_an_operator_who_goes_away_stops_receiving(http, server, tenant):
    first, second = tenant.add_operator("agent"), tenant.add_operator("agent")
    online(http, first, second)
    http.put(assignment(tenant), headers=tenant.operator, json={"mode": "round-robin", "capacity": 100})
    seeder = Seeder(server, tenant.org_id, tenant.website_id)
    before = seeder.conversations(4)
    assert Counter(wait_assigned(server, before, 4).values()) == {first.id: 2, second.id: 2}
    assert http.put("/api/operators/me/availability", headers=second.headers, json={"status": "away"}).is_success
    later = seeder.conversations(6)
    assert Counter(wait_assigned(server, later, 6).values()) == {first.id: 6}


def test_an_operator_inactive_at_the_dashboard_stops_receiving(quick_away_server):
    """With PARLEY_OPERATOR_AWAY_AFTER_SECONDS=2: the operator who keeps working receives, the idle one does not."""
    tenant = make_tenant(quick_away_server)
    busy, idle = tenant.add_operator("agent"), tenant.add_operator("agent")
    stop = threading.Event()
    with quick_away_server.client() as http:
        online(http, busy, idle)
        http.put(assignment(tenant), headers=tenant.operator, json={"mode": "round-robin", "capacity": 100})

        def keep_working() -> None:
            with quick_away_server.client() as own:
                while not stop.wait(0.4):
                    own.post("/api/operators/me/activity", headers=busy.headers)

        worker = threading.Thread(target=keep_working, daemon=True)
        worker.start()
        try:
            time.sleep(2.5)  # `idle` did nothing for longer than the delay
            states = {o["_id"]: o["availability"] for o in http.get("/api/operators", headers=tenant.operator).json()}
            assert (states[str(busy.id)], states[str(idle.id)]) == ("online", "away")
            conversations = Seeder(quick_away_server, tenant.org_id, tenant.website_id).conversations(6)
            assert Counter(wait_assigned(quick_away_server, conversations, 6, timeout=30).values()) == {busy.id: 6}
        finally:
            stop.set()
            worker.join()


def test_a_reply_takes_an_unassigned_conversation_when_the_website_says_so(http, server, tenant):
    agent = tenant.add_operator("agent")
    turned_on = http.put(assignment(tenant), headers=tenant.operator,
                         json={"mode": "off", "capacity": 5, "assignOnReply": True})
    assert turned_on.json()["assignOnReply"] is True
    chatting = Chatting(http, tenant)
    chatting.say("Hello?")
    note = http.post("/api/messages", headers=agent.headers, json={
        "conversationId": chatting.conversation_id, "content": "internal", "from": "operator", "internal": True})
    assert note.status_code == 200, note.text
    reply = http.post("/api/messages", headers=agent.headers, json={
        "conversationId": chatting.conversation_id, "content": "Hi, I am on it", "from": "operator"})
    assert reply.status_code == 200, reply.text
    conversation_id = uuid.UUID(chatting.conversation_id)
    assert wait_assigned(server, [conversation_id], 1, timeout=20) == {conversation_id: agent.id}
    assert assigned_events(server, [conversation_id]) == {conversation_id: 1}


def test_a_wrong_setting_is_refused_and_changes_nothing(http, tenant, other_tenant):
    http.put(assignment(tenant), headers=tenant.operator, json={"mode": "least-busy", "capacity": 4})
    for body in ({"mode": "random", "capacity": 4}, {"mode": "round-robin", "capacity": 0}, {"mode": "round-robin"},
                 {"mode": "round-robin", "capacity": 4, "teamId": str(uuid.uuid4())}, {"capacity": 4}):
        refused = http.put(assignment(tenant), headers=tenant.operator, json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    kept = http.get(assignment(tenant), headers=tenant.operator).json()
    assert (kept["mode"], kept["capacity"]) == ("least-busy", 4)
    # an agent reads it but may not change it; another organization's website is not found
    agent = tenant.add_operator("agent")
    assert http.get(assignment(tenant), headers=agent.headers).status_code == 200
    assert http.put(assignment(tenant), headers=agent.headers, json={"mode": "off", "capacity": 1}).status_code == 403
    assert http.put(assignment(other_tenant), headers=tenant.operator,
                    json={"mode": "off", "capacity": 1}).status_code == 404
    assert http.get(assignment(other_tenant), headers=tenant.operator).status_code == 404


def test_assigners_racing_on_one_conversation_assign_it_once(server, tenant):
    """What a former leader still running, or an operator at the same moment, meets: the stream decides."""
    operators = [uuid.uuid4() for _ in range(8)]
    conversation = Seeder(server, tenant.org_id, tenant.website_id).conversations(1)[0]
    stores = [server.store() for _ in operators]  # made one after the other: each checks the schema
    start = threading.Barrier(len(operators), timeout=30)
    results: list[int | None] = []

    def race(store, operator_id: uuid.UUID) -> None:
        start.wait()
        results.append(assign_if_unassigned(store, tenant.org_id, conversation, operator_id, None))

    threads = [threading.Thread(target=race, args=pair) for pair in zip(stores, operators)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for store in stores:
            store.close()
    assert len(results) == len(operators)
    assert sum(1 for r in results if r is not None) == 1
    assert assigned_events(server, [conversation]) == {conversation: 1}
    winner = wait_assigned(server, [conversation], 1)[conversation]
    assert winner in operators
    # another organization's conversation is not found, and nothing is appended
    store = server.store()
    try:
        assert assign_if_unassigned(store, uuid.uuid4(), conversation, operators[0], None) is None
    finally:
        store.close()
