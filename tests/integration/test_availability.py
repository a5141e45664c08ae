"""Operators' availability: chosen with `PUT /api/operators/me/availability`, shown in `GET /api/operators`,
`online` turning to `away` after inactivity at the dashboard and back with activity; the view the widget and
notifications ask whether anyone is online."""

from __future__ import annotations

import asyncio
import time
import uuid

import psycopg

from projections.views.availability import anyone_online, online_operators
from tests.support.servers import make_tenant

AVAILABILITY = "/api/operators/me/availability"


def availability_in_team(http, headers, operator_id) -> str:
    listed = http.get("/api/operators", headers=headers)
    assert listed.status_code == 200, listed.text
    return {o["_id"]: o["availability"] for o in listed.json()}[str(operator_id)]


def online_now(database_url: str, org_id: uuid.UUID, website_id: uuid.UUID | None = None) -> tuple[bool, list]:
    async def ask():
        async with await psycopg.AsyncConnection.connect(database_url) as conn:
            return await anyone_online(conn, org_id, website_id), await online_operators(conn, org_id)
    return asyncio.run(ask())


def test_an_operator_chooses_online_away_or_offline_and_the_team_sees_it(http, tenant, other_tenant):
    colleague = tenant.add_operator("agent")
    chosen = http.put(AVAILABILITY, headers=colleague.headers, json={"status": "online"})
    assert chosen.status_code == 200, chosen.text
    assert chosen.headers["Parley-Position"]
    assert chosen.json() | {"awayAt": None} == {"status": "online", "chosen": "online", "awayAt": None,
                                                "awayAfterSeconds": 300.0}
    assert availability_in_team(http, tenant.operator, colleague.id) == "online"
    assert http.get(f"/api/operators?availability=online", headers=tenant.operator).json()[0]["_id"] == str(colleague.id)
    for status in ("away", "offline"):
        changed = http.put(AVAILABILITY, headers=colleague.headers, json={"status": status})
        assert changed.json()["status"] == changed.json()["chosen"] == status
        assert availability_in_team(http, tenant.operator, colleague.id) == status
    # the other organization sees none of it, and its operator's choice changes nothing here
    assert str(colleague.id) not in {o["_id"] for o in http.get("/api/operators", headers=other_tenant.operator).json()}
    http.put(AVAILABILITY, headers=other_tenant.operator, json={"status": "online"})
    assert availability_in_team(http, tenant.operator, colleague.id) == "offline"


def test_a_wrong_availability_is_refused_and_changes_nothing(http, tenant):
    http.put(AVAILABILITY, headers=tenant.operator, json={"status": "away"})
    for body in ({"status": "busy"}, {}, {"status": "online", "extra": 1}, {"status": None}):
        refused = http.put(AVAILABILITY, headers=tenant.operator, json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    assert http.get(AVAILABILITY, headers=tenant.operator).json()["chosen"] == "away"
    # an API key is no operator
    assert http.put(AVAILABILITY, headers=tenant.key(), json={"status": "online"}).status_code in (401, 403)


def test_choosing_the_same_availability_again_appends_nothing(http, tenant):
    first = http.put(AVAILABILITY, headers=tenant.operator, json={"status": "offline"})
    again = http.put(AVAILABILITY, headers=tenant.operator, json={"status": "offline"})
    assert int(again.headers["Parley-Position"]) == int(first.headers["Parley-Position"])


def test_online_turns_away_after_inactivity_and_back_with_activity(quick_away_server):
    tenant = make_tenant(quick_away_server)
    colleague = tenant.add_operator("agent")
    with quick_away_server.client() as http:
        assert http.get(AVAILABILITY, headers=colleague.headers).json()["status"] == "away"  # never active yet
        assert not online_now(quick_away_server.database_url, tenant.org_id)[0]
        assert http.put(AVAILABILITY, headers=colleague.headers, json={"status": "online"}).json()["status"] == "online"
        assert availability_in_team(http, tenant.operator, colleague.id) == "online"
        assert online_now(quick_away_server.database_url, tenant.org_id, tenant.website_id) == (True, [colleague.id])
        time.sleep(2.5)
        assert availability_in_team(http, tenant.operator, colleague.id) == "away"
        idle = http.get(AVAILABILITY, headers=colleague.headers).json()
        assert (idle["status"], idle["chosen"]) == ("away", "online")  # reading it is no activity
        assert online_now(quick_away_server.database_url, tenant.org_id) == (False, [])
        back = http.post("/api/operators/me/activity", headers=colleague.headers)
        assert back.status_code == 200, back.text
        assert back.json()["status"] == "online"
        assert availability_in_team(http, tenant.operator, colleague.id) == "online"
        # activity does not bring back one who chose away
        http.put(AVAILABILITY, headers=colleague.headers, json={"status": "away"})
        assert http.post("/api/operators/me/activity", headers=colleague.headers).json()["status"] == "away"


def test_anyone_online_is_asked_of_one_organization_and_its_own_websites(http, server, tenant, other_tenant):
    http.put(AVAILABILITY, headers=tenant.operator, json={"status": "online"})
    assert online_now(server.database_url, tenant.org_id, tenant.website_id)[0]
    # another organization's website is not this organization's to answer for
    assert not online_now(server.database_url, tenant.org_id, other_tenant.website_id)[0]
    assert not online_now(server.database_url, other_tenant.org_id)[0]


def test_a_disabled_operator_reads_offline(http, tenant):
    colleague = tenant.add_operator("agent")
    http.put(AVAILABILITY, headers=colleague.headers, json={"status": "online"})
    disabled = http.patch(f"/api/operators/{colleague.id}", headers=tenant.operator, json={"status": "disabled"})
    assert disabled.status_code == 200, disabled.text
    assert disabled.json()["availability"] == "offline"
