"""`GET /api/reports/operators`, `/teams` and `/labels`: the figures from real events; the visitor's
ratings only; the period and website filters; CSV; a report rebuilt after the fact counts the same past."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
import uuid
from datetime import datetime, timedelta

import pytest

from commands import conversations, labels, teams
from commands.principal import Principal
from tests.support.visitors import Chatting


def breakdown(http, headers, table="operators", **params):
    response = http.get(f"/api/reports/{table}", headers=headers, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def by_id(rows, key="operatorId"):
    return {row[key]: row for row in rows}


def reply(http, headers, conversation_id, content, **extra):
    response = http.post("/api/messages", headers=headers, json={
        "conversationId": conversation_id, "content": content, "from": "operator", **extra})
    assert response.status_code == 200, response.text
    return response.json()


def seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


def resolve(http, headers, conversation_id) -> str:
    """Resolves the conversation; the time its resolve was recorded at."""
    assert http.patch(f"/api/conversations/{conversation_id}", headers=headers,
                      json={"resolved": True}).status_code == 200
    history = http.get(f"/api/conversations/{conversation_id}/history", headers=headers).json()
    return next(entry["at"] for entry in reversed(history["entries"])
                if entry["type"] == "ConversationUpdated" and entry["data"].get("resolved"))


@pytest.fixture
def worked(http, tenant):
    """Two operators at work on two conversations: what each did, with the times the figures come from."""
    ada, bob = tenant.operator, tenant.add_operator("agent")
    ada_id = http.get("/api/operators/me", headers=ada).json()["_id"]
    first, second = Chatting(http, tenant), Chatting(http, tenant)
    question = first.say("where is my parcel?")
    ada_reply = reply(http, ada, first.conversation_id, "on its way")
    reply(http, ada, first.conversation_id, "checking the carrier", internal=True)  # a note: not a reply
    bob_reply = reply(http, bob.headers, first.conversation_id, "tracking number follows")
    hello = second.say("hello")
    bob_first = reply(http, bob.headers, second.conversation_id, "hi, how can I help?")
    # the visitors' ratings count; the team's own rating of a reply never does
    for chatting, message, rating in ((first, ada_reply, "happy"), (first, bob_reply, "unhappy")):
        assert http.post(f"/api/messages/{message['_id']}/rating", headers=chatting.headers,
                         json={"websiteId": str(tenant.website_id), "rating": rating}).status_code == 200
    for message in (ada_reply, bob_first):
        assert http.post(f"/api/messages/{message['_id']}/rating/operator", headers=bob.headers,
                         json={"rating": "happy"}).status_code == 200
    opened = http.get(f"/api/conversations/{second.conversation_id}", headers=ada).json()["createdAt"]
    resolved_at = resolve(http, ada, second.conversation_id)
    return {"ada": ada_id, "bob": str(bob.id), "bob_email": bob.email,
            "ada_first": seconds_between(question["creationTime"], ada_reply["creationTime"]),
            "bob_first": seconds_between(hello["creationTime"], bob_first["creationTime"]),
            "resolution": seconds_between(opened, resolved_at)}


def check_figures(rows, worked):
    ada, bob = by_id(rows)[worked["ada"]], by_id(rows)[worked["bob"]]
    assert (ada["conversations"], ada["replies"], ada["rated"], ada["happy"]) == (1, 1, 1, 1)
    assert ada["firstResponseMedianSeconds"] == pytest.approx(worked["ada_first"], abs=0.01)
    assert ada["firstResponseP90Seconds"] == pytest.approx(worked["ada_first"], abs=0.01)
    assert ada["resolutionMedianSeconds"] == pytest.approx(worked["resolution"], abs=0.01)
    assert (bob["conversations"], bob["replies"], bob["rated"], bob["happy"]) == (2, 2, 1, 0)
    assert bob["firstResponseMedianSeconds"] == pytest.approx(worked["bob_first"], abs=0.01)
    assert bob["resolutionMedianSeconds"] is None and bob["resolutionP90Seconds"] is None
    assert bob["displayName"] == worked["bob_email"]  # no display name set: the e-mail address


def test_the_operator_report_counts_each_operator_s_work(http, tenant, other_tenant, worked):
    rows = breakdown(http, tenant.operator)
    assert set(by_id(rows)) == {worked["ada"], worked["bob"]}
    check_figures(rows, worked)
    # the other organization sees its own operators, none of this
    assert [row["replies"] for row in breakdown(http, other_tenant.operator)] == [0]


def test_period_and_website_filters(http, tenant, worked):
    yesterday = (datetime.now().astimezone() - timedelta(days=1)).isoformat()
    before = breakdown(http, tenant.operator, until=yesterday)
    assert all(row["replies"] == row["rated"] == 0 and row["firstResponseMedianSeconds"] is None for row in before)
    check_figures(breakdown(http, tenant.operator, websiteId=str(tenant.website_id), since=yesterday), worked)
    elsewhere, _ = tenant.add_website()
    assert all(row["replies"] == 0 for row in breakdown(http, tenant.operator, websiteId=str(elsewhere)))


def test_the_csv_holds_the_same_rows(http, tenant, worked):
    response = http.get("/api/reports/operators", headers={**tenant.operator, "Accept": "text/csv"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    header, *lines = list(csv.reader(io.StringIO(response.text)))
    rows = breakdown(http, tenant.operator)
    assert header == list(rows[0]) and len(lines) == len(rows)
    for line, row in zip(lines, rows):
        assert line[0] == row["operatorId"] and int(line[3]) == row["replies"]
        assert (float(line[4]) if line[4] else None) == pytest.approx(row["firstResponseMedianSeconds"])


def rebuild_reports(server, tmp_path) -> None:
    """The reports read model dropped and built again from the whole event history, as a report added
    after the conversations happened is built."""
    result = subprocess.run([sys.executable, "-m", "parley.cli", "projections", "rebuild", "reports",
                             "--data-dir", str(tmp_path / "data")],
                            env=server.env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_a_report_rebuilt_after_the_fact_counts_the_earlier_events(server, http, tenant, tmp_path, worked):
    rebuild_reports(server, tmp_path)
    check_figures(breakdown(http, tenant.operator), worked)


def as_operator(server, tenant, operator_id, command, *args):
    """Runs a workflow command as the operator, and waits for the reports read model to hold it."""
    store = server.store()
    try:
        principal = Principal("operator", tenant.org_id, uuid.uuid4(), operator_id=uuid.UUID(operator_id),
                              role="owner")
        created = command(store, principal, *args)
    finally:
        store.close()
    server.wait_projected(created.position, "reports")
    return created


def check_team_and_label_figures(http, tenant, ids, resolution):
    billing = by_id(breakdown(http, tenant.operator, "teams"), "teamId")
    assert set(billing) == {ids["billing"], ids["sales"]}
    row = billing[ids["billing"]]
    assert (row["name"], row["conversations"], row["replies"], row["rated"]) == ("Billing", 1, 2, 0)
    assert row["resolutionMedianSeconds"] == pytest.approx(resolution, abs=0.01)
    assert row["firstResponseMedianSeconds"] is not None
    assert billing[ids["sales"]]["conversations"] == 0 and billing[ids["sales"]]["resolutionMedianSeconds"] is None
    by_label = by_id(breakdown(http, tenant.operator, "labels"), "labelId")
    assert set(by_label) == {ids["refund"], ids["vip"]}
    assert [(by_label[ids[name]]["conversations"], by_label[ids[name]]["replies"]) for name in ("refund", "vip")] == [
        (2, 3), (1, 2)]


def test_the_team_and_label_reports_count_their_conversations(server, http, tenant, tmp_path):
    """Also: a resolve is credited to the conversation's assignee, not to whoever clicked."""
    ada = http.get("/api/operators/me", headers=tenant.operator).json()["_id"]
    bob = str(tenant.add_operator("agent").id)
    ids = {"billing": str(as_operator(server, tenant, ada, teams.create_team, teams.TeamBody("Billing", [ada])).id),
           "sales": str(as_operator(server, tenant, ada, teams.create_team, teams.TeamBody("Sales")).id)}
    for name in ("refund", "vip"):
        ids[name] = str(as_operator(server, tenant, ada, labels.create_label, labels.LabelBody(name)).id)
    first, second = Chatting(http, tenant), Chatting(http, tenant)
    first.say("I want my money back")
    second.say("refund please")
    as_operator(server, tenant, ada, conversations.update_conversation, uuid.UUID(first.conversation_id),
                conversations.ConversationChange(team_id=ids["billing"], assignee_id=bob, labels=["refund", "vip"]))
    as_operator(server, tenant, ada, conversations.update_conversation, uuid.UUID(second.conversation_id),
                conversations.ConversationChange(labels=["refund"]))
    for chatting, content in ((first, "sorry about that"), (first, "done"), (second, "on it")):
        reply(http, tenant.operator, chatting.conversation_id, content)
    opened = http.get(f"/api/conversations/{first.conversation_id}", headers=tenant.operator).json()["createdAt"]
    resolution = seconds_between(opened, resolve(http, tenant.operator, first.conversation_id))
    check_team_and_label_figures(http, tenant, ids, resolution)
    operators = by_id(breakdown(http, tenant.operator))
    assert operators[bob]["resolutionMedianSeconds"] == pytest.approx(resolution, abs=0.01)
    assert operators[ada]["resolutionMedianSeconds"] is None and operators[ada]["replies"] == 3

    csv_rows = list(csv.reader(io.StringIO(http.get("/api/reports/labels", headers={
        **tenant.operator, "Accept": "text/csv"}).text)))
    assert csv_rows[0][:3] == ["labelId", "name", "conversations"]
    assert sorted(row[1:4] for row in csv_rows[1:]) == [["refund", "2", "3"], ["vip", "1", "2"]]

    rebuild_reports(server, tmp_path)
    check_team_and_label_figures(http, tenant, ids, resolution)


@pytest.mark.parametrize("params, field", [({"since": "yesterday"}, "since"), ({"until": "2026-01-01"}, "until"),
                                           ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
                                            "since"), ({"websiteId": "42"}, "websiteId")])
def test_bad_parameters_answer_400(http, tenant, params, field):
    response = http.get("/api/reports/operators", headers=tenant.operator, params=params)
    assert response.status_code == 400 and response.json()["field"] == field


def test_the_report_is_for_the_organization_s_operators(http, tenant, other_tenant):
    assert http.get("/api/reports/operators").status_code == 401
    assert http.get("/api/reports/operators", headers=tenant.key()).status_code == 403
    elsewhere = http.get("/api/reports/operators", headers=other_tenant.operator,
                         params={"websiteId": str(tenant.website_id)})
    assert elsewhere.status_code == 404
    assert http.get("/api/reports/operators", headers=tenant.operator,
                    params={"websiteId": str(uuid.uuid4())}).status_code == 404


def test_business_hours_only_counts_the_time_the_website_was_open(http, tenant, worked):
    """The website closed all week but one hour of another day: with `businessHours=true` the responses and
    the resolution, all made while closed, count no time at all; without it, their clock time."""
    today = datetime.now().astimezone().strftime("%a").lower()[:3]
    other = next(day for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun") if day != today)
    saved = http.put(f"/api/websites/{tenant.website_name}/hours", headers=tenant.operator,
                     json={"timezone": "UTC", "weekly": {other: [["09:00", "10:00"]]}, "holidays": []})
    assert saved.status_code == 200, saved.text
    check_figures(breakdown(http, tenant.operator), worked)  # clock time by default
    ada = by_id(breakdown(http, tenant.operator, businessHours="true"))[worked["ada"]]
    assert ada["firstResponseMedianSeconds"] == ada["resolutionMedianSeconds"] == 0
    assert (ada["replies"], ada["rated"], ada["happy"]) == (1, 1, 1)  # only the times change
