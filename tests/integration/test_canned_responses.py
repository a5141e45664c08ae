"""Canned responses over HTTP: the organization's and personal ones, shortcuts unique (409, also when two
operators race), roles, another organization's invisible, and bad input refused with nothing stored."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest


def create(http, headers, status=200, **body):
    response = http.post("/api/cannedresponses", headers=headers, json=body)
    assert response.status_code == status, response.text
    return response.json()


def listed(http, headers) -> dict[str, dict]:
    response = http.get("/api/cannedresponses", headers=headers)
    assert response.status_code == 200, response.text
    return {item["_id"]: item for item in response.json()}


def test_shared_and_personal_responses(http, tenant):
    agent, colleague = tenant.add_operator("agent"), tenant.add_operator("agent")
    shared = create(http, tenant.operator, shortcut="/Refund", content="Hi {{visitor.name}}, {{operator.name}}")
    assert shared == {"_id": shared["_id"], "shortcut": "refund",
                      "content": "Hi {{visitor.name}}, {{operator.name}}", "personal": False}
    mine = create(http, agent.headers, shortcut="refund", content="my own words", personal=True)
    # every operator sees the organization's; a personal one only its author
    assert set(listed(http, agent.headers)) == {shared["_id"], mine["_id"]}
    assert set(listed(http, colleague.headers)) == {shared["_id"]}
    assert set(listed(http, tenant.operator)) == {shared["_id"]}
    for method in ("put", "delete"):
        response = http.request(method.upper(), f"/api/cannedresponses/{mine['_id']}", headers=colleague.headers,
                                **({"json": {"content": "stolen"}} if method == "put" else {}))
        assert response.status_code == 404, response.text
    assert listed(http, agent.headers)[mine["_id"]]["content"] == "my own words"
    # an agent writes personal ones only
    create(http, agent.headers, 403, shortcut="mine", content="x")
    response = http.put(f"/api/cannedresponses/{shared['_id']}", headers=agent.headers, json={"content": "x"})
    assert response.status_code == 403
    # the author changes and deletes their own
    response = http.put(f"/api/cannedresponses/{mine['_id']}", headers=agent.headers, json={"shortcut": "thanks"})
    assert response.status_code == 200 and response.json()["shortcut"] == "thanks"
    response = http.delete(f"/api/cannedresponses/{mine['_id']}", headers=agent.headers)
    assert response.status_code == 200 and response.json() == {"_id": mine["_id"], "deleted": True}
    assert set(listed(http, agent.headers)) == {shared["_id"]}


def test_a_taken_shortcut_is_409(http, tenant):
    first = create(http, tenant.operator, shortcut="hours", content="9 to 5")
    create(http, tenant.operator, 409, shortcut="HOURS", content="again")
    other = create(http, tenant.operator, shortcut="days", content="Monday to Friday")
    response = http.put(f"/api/cannedresponses/{other['_id']}", headers=tenant.operator, json={"shortcut": "hours"})
    assert response.status_code == 409
    assert listed(http, tenant.operator)[other["_id"]]["shortcut"] == "days"
    assert listed(http, tenant.operator)[first["_id"]]["content"] == "9 to 5"


def test_racing_creations_of_one_shortcut_make_one(http, tenant):
    def attempt(n):
        return http.post("/api/cannedresponses", headers=tenant.operator,
                         json={"shortcut": "race", "content": f"attempt {n}"}).status_code
    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(attempt, range(8)))
    assert statuses == [200] + [409] * 7
    assert [item["shortcut"] for item in listed(http, tenant.operator).values()].count("race") == 1


def test_another_organization_sees_and_touches_nothing(http, tenant, other_tenant):
    shared = create(http, tenant.operator, shortcut="hello", content="Hello!")
    assert listed(http, other_tenant.operator) == {}
    for method in ("PUT", "DELETE"):
        response = http.request(method, f"/api/cannedresponses/{shared['_id']}", headers=other_tenant.operator,
                                **({"json": {"content": "x"}} if method == "PUT" else {}))
        assert response.status_code == 404, response.text
    # the other organization's shortcut namespace is its own
    create(http, other_tenant.operator, shortcut="hello", content="Hi")
    assert listed(http, tenant.operator)[shared["_id"]]["content"] == "Hello!"
    # API keys have no canned responses
    assert http.get("/api/cannedresponses", headers=tenant.key()).status_code == 403


@pytest.mark.parametrize("body", [{"shortcut": "two words", "content": "x"}, {"shortcut": "ok", "content": "  "},
                                  {"shortcut": "ok"}, {"shortcut": "ok", "content": "x", "extra": 1},
                                  {"shortcut": "ok", "content": "x" * 5001}, {"shortcut": 5, "content": "x"}])
def test_bad_input_is_refused_and_nothing_stored(http, tenant, body):
    before = listed(http, tenant.operator)
    response = http.post("/api/cannedresponses", headers=tenant.operator, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert listed(http, tenant.operator) == before
