"""`GET /api/reports`: the dashboard's charts from the read models, per day in the caller's time zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from tests.support.visitors import Chatting


def report(http, tenant, **params):
    response = http.get("/api/reports", headers=tenant.operator, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_report_counts_conversations_first_responses_ratings_and_hours(http, tenant, other_tenant):
    answered, waiting = Chatting(http, tenant), Chatting(http, tenant)
    question = answered.say("where is my parcel?")
    answered.say("hello?")
    waiting.say("anyone there?")
    note = {"conversationId": answered.conversation_id, "content": "internal", "from": "operator", "internal": True}
    assert http.post("/api/messages", headers=tenant.operator, json=note).status_code == 200
    reply = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": answered.conversation_id, "content": "on its way", "from": "operator"}).json()
    assert http.post(f"/api/messages/{reply['_id']}/rating", headers=answered.headers,
                     json={"websiteId": str(tenant.website_id), "rating": "happy"}).status_code == 200
    second_website, _ = tenant.add_website()

    zone = "Pacific/Kiritimati"  # UTC+14: "today" there is often another date than in UTC
    found = report(http, tenant, days=7, timezone=zone)
    assert found["timezone"] == zone and len(found["days"]) == 7
    today = found["days"][-1]
    assert today["date"] == datetime.now(ZoneInfo(zone)).date().isoformat()
    assert today["conversations"] == 2 and today["ratings"] == {"happy": 1, "neutral": 0, "unhappy": 0}
    waited = (datetime.fromisoformat(reply["creationTime"]) - datetime.fromisoformat(question["creationTime"]))
    assert today["medianFirstResponseSeconds"] == pytest.approx(waited.total_seconds(), abs=0.01)
    assert sum(day["conversations"] for day in found["days"][:-1]) == 0
    assert sum(found["busiestHours"]) == 3 and len(found["busiestHours"]) == 24
    totals = {w["websiteId"]: w["conversations"] for w in found["byWebsite"]}
    assert totals == {str(tenant.website_id): 2, str(second_website): 0}

    only_second = report(http, tenant, websiteId=str(second_website))
    assert len(only_second["days"]) == 30 and sum(d["conversations"] for d in only_second["days"]) == 0
    assert sum(d["conversations"] for d in report(http, other_tenant)["days"]) == 0


@pytest.mark.parametrize("params, field", [({"days": "0"}, "days"), ({"days": "367"}, "days"),
                                           ({"days": "a"}, "days"), ({"timezone": "Mars/Base"}, "timezone"),
                                           ({"websiteId": ""}, "websiteId"), ({"websiteId": "42"}, "websiteId")])
def test_bad_report_parameters_answer_400(http, tenant, params, field):
    response = http.get("/api/reports", headers=tenant.operator, params=params)
    assert response.status_code == 400 and response.json()["field"] == field


def test_reports_are_for_the_organization_s_operators(http, tenant, other_tenant):
    assert http.get("/api/reports").status_code == 401
    assert http.get("/api/reports", headers=tenant.key()).status_code == 403
    elsewhere = http.get("/api/reports", headers=other_tenant.operator, params={"websiteId": str(tenant.website_id)})
    assert elsewhere.status_code == 404
