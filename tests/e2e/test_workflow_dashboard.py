"""The team's workflow in the dashboard (Debian's Chromium): inbox rows an agent can triage from, the
Mine/Unassigned tabs and the team and label views with the API's counts, the conversation's assignee,
team, labels, priority and snooze controls, two operators assigning the same conversation from two
browsers at once (one wins, the other is told and shown the winner), and the Teams and labels page,
each checked with axe-core."""

from __future__ import annotations

import dataclasses

import pytest

from tests.e2e.test_dashboard import Dashboard
from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures
from tests.support.visitors import Chatting
from tests.support.widget_pages import eventually


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    yield context
    context.close()


def ok(response):
    assert response.status_code == 200, response.text
    return response.json()


def seed_triage(http, tenant) -> dict[str, str]:
    """Three conversations an agent triages: one urgent and labelled, assigned to the operator, one with a
    note last and a team, one unassigned whose visitor waits."""
    me = ok(http.get("/api/operators/me", headers=tenant.operator))["_id"]
    for name, color in (("refund", "#b42318"), ("vip", "#175cd3")):
        ok(http.post("/api/labels", headers=tenant.operator, json={"name": name, "color": color}))
    team = ok(http.post("/api/teams", headers=tenant.operator, json={"name": "Billing", "memberIds": [me]}))
    urgent, noted, waiting = (Chatting(http, tenant) for _ in range(3))
    urgent.say("I was charged twice for my order #1042.\nPlease refund one of them.")
    noted.say("Can I change my plan?")
    ok(http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": noted.conversation_id, "content": "Check with finance first", "from": "operator",
        "internal": True}))
    waiting.say("Hello? Is anyone there?")
    ok(http.patch(f"/api/conversations/{urgent.conversation_id}", headers=tenant.operator,
                  json={"assigneeId": me, "labels": ["refund", "vip"], "priority": "urgent"}))
    ok(http.patch(f"/api/conversations/{noted.conversation_id}", headers=tenant.operator,
                  json={"teamId": team["_id"], "labels": ["refund"], "priority": "low"}))
    return {"me": me, "team": team["_id"], "urgent": urgent.conversation_id, "noted": noted.conversation_id,
            "waiting": waiting.conversation_id}


def only_one(page, conversation_id: str) -> None:
    """The list shows this conversation alone (once the view asked for has loaded)."""
    page.wait_for_function("(id) => { const rows = document.querySelectorAll('.conversations li[data-id]'); "
                           "return rows.length === 1 && rows[0].dataset.id === id; }", arg=conversation_id)


def test_inbox_rows_tabs_and_views_to_triage_from(context, server, http, tenant, axe_script):
    seeded = seed_triage(http, tenant)
    dashboard = Dashboard(context, server, tenant).sign_in()
    page = dashboard.page
    urgent = page.locator(f".conversations li[data-id='{seeded['urgent']}']")
    urgent.locator(".badge.label", has_text="vip").wait_for()
    assert urgent.locator(".preview").inner_text() == "I was charged twice for my order #1042."
    assert urgent.locator(".badge.priority.urgent").inner_text() == "Urgent"
    assert urgent.locator("img.assignee").get_attribute("src") == f"/api/operators/{seeded['me']}/avatar"
    noted = page.locator(f".conversations li[data-id='{seeded['noted']}']")
    assert noted.locator(".preview").inner_text() == "Note: Check with finance first"
    waiting = page.locator(f".conversations li[data-id='{seeded['waiting']}']")
    assert waiting.locator(".assignee.none").inner_text() == "Unassigned"
    assert waiting.locator(".waiting").count() == 1
    counts = ok(http.get("/api/conversations", headers=tenant.operator, params={
        "websiteId": str(tenant.website_id), "inboxFilter": "all"}))["counts"]
    for tab in ("mine", "unassigned"):
        assert int(page.text_content(f"[data-count={tab}]")) == counts[tab]
    assert page.locator(".views a", has_text="refund").locator(".count").inner_text() == "2"
    screenshot(page, "inbox-triage")
    assert_accessible(page, axe_script, "the triage inbox", EVERY_IMPACT)

    page.locator(".views a", has_text="Billing").click()
    page.wait_for_url(f"**/app/inbox?team={seeded['team']}")
    only_one(page, seeded["noted"])
    page.locator(".views a", has_text="vip").click()
    page.wait_for_url("**/app/inbox?label=vip")
    only_one(page, seeded["urgent"])
    page.locator("[data-tab=mine]").click()
    page.wait_for_url("**tab=mine**")

    # the conversation's controls: assignee, team, labels, priority, snooze
    page.goto(dashboard.url(f"/app/inbox/{seeded['waiting']}"))
    page.locator("#assign-to-me").click()
    page.wait_for_function(f"(me) => document.querySelector('#assignee')?.value === me", arg=seeded["me"])
    page.select_option("#priority", "high")
    page.locator(".workflow .labels label", has_text="refund").locator("input").check()
    page.select_option("#snooze", "visitor")
    expected = (seeded["me"], "high", ["refund"], True, None)
    eventually(lambda: (lambda c: (c["assigneeId"], c["priority"], c["labels"], c["snoozed"], c["snoozedUntil"]))(
        ok(http.get(f"/api/conversations/{seeded['waiting']}", headers=tenant.operator))) == expected,
    )
    assert page.locator(".conversation-header .error").count() == 0
    assert_accessible(page, axe_script, "a conversation's workflow controls", EVERY_IMPACT)
    screenshot(page, "conversation-workflow")
    dashboard.assert_clean()


def test_two_browsers_assigning_at_once_one_wins_and_the_other_is_shown_it(browser, server, http, tenant):
    colleague = tenant.add_operator("agent")
    chatting = Chatting(http, tenant)
    chatting.say("Who will help me?")
    contexts = [browser.new_context(viewport={"width": 1280, "height": 860}) for _ in range(2)]
    try:
        first = Dashboard(contexts[0], server, tenant).sign_in()
        second = Dashboard(contexts[1], server, dataclasses.replace(tenant, operator_email=colleague.email))
        # the second one's live updates are cut, so it still shows the version both read when it clicks
        second.page.route("**/api/realtime*", lambda route: route.abort())
        second.sign_in()
        for dashboard in (first, second):
            dashboard.page.goto(dashboard.url(f"/app/inbox/{chatting.conversation_id}"))
            dashboard.page.locator("#assign-to-me").wait_for()
        first.page.locator("#assign-to-me").click()
        second.page.locator("#assign-to-me").click()
        # both clicked on the same version: whichever the service took first wins, the other is told
        told = "Someone else changed this conversation"
        me = ok(http.get("/api/operators/me", headers=tenant.operator))["_id"]
        winner = eventually(lambda: ok(http.get(f"/api/conversations/{chatting.conversation_id}",
                                                headers=tenant.operator))["assigneeId"])
        loser = second if winner == me else first
        assert winner in (me, str(colleague.id))
        loser.page.locator(".conversation-header .error").wait_for()
        assert told in loser.page.locator(".conversation-header .error").inner_text()
        for dashboard in (first, second):  # both show the winner
            dashboard.page.wait_for_function("(id) => document.querySelector('#assignee')?.value === id", arg=winner)
        assert ok(http.get(f"/api/conversations/{chatting.conversation_id}",
                           headers=tenant.operator))["assigneeId"] == winner
        first.assert_clean()
    finally:
        for context in contexts:
            context.close()


def test_teams_and_labels_are_managed_on_their_page(context, server, http, tenant, axe_script):
    agent = tenant.add_operator("agent")
    dashboard = Dashboard(context, server, tenant).sign_in()
    page = dashboard.page
    page.goto(dashboard.url("/app/workflow"))
    page.get_by_label("New team").fill("Tier 1")
    page.get_by_role("button", name="Add team").click()
    team = page.locator("li.team[data-name='Tier 1']")
    team.wait_for()
    team.get_by_label(agent.email).check()
    team.get_by_role("button", name="Save").click()
    page.get_by_label("New label").fill("refund")
    page.get_by_role("button", name="Add label").click()
    page.locator("li.label[data-name='refund']").wait_for()
    page.get_by_label("New label").fill("Refund")
    page.get_by_role("button", name="Add label").click()
    page.get_by_role("alert").wait_for()  # names are unique per organization: 409, said on the page
    assert "exists already" in page.get_by_role("alert").inner_text()
    teams = ok(http.get("/api/teams", headers=tenant.operator))
    assert [(t["name"], t["memberIds"]) for t in teams] == [("Tier 1", [str(agent.id)])]
    assert [l["name"] for l in ok(http.get("/api/labels", headers=tenant.operator))] == ["refund"]
    assert_accessible(page, axe_script, "the Teams and labels page", EVERY_IMPACT)
    screenshot(page, "teams-and-labels")
    dashboard.assert_clean()
