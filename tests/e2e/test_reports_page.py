"""The dashboard's Reports page in a real browser: the per-operator, per-team and per-label tables from
real events, the website filter, a CSV download, and axe finding nothing on it."""

from __future__ import annotations

import csv
import io

import pytest

from tests.e2e.test_dashboard import Dashboard
from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures
from tests.support.visitors import Chatting


@pytest.fixture
def dashboard(browser, server, tenant):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    yield Dashboard(context, server, tenant)
    context.close()


def test_the_operator_table_filters_and_downloads(dashboard, http, tenant, axe_script):
    chatting = Chatting(http, tenant)
    chatting.say("where is my parcel?")
    sent = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": chatting.conversation_id, "content": "on its way", "from": "operator"})
    assert sent.status_code == 200, sent.text
    assert http.post(f"/api/messages/{sent.json()['_id']}/rating", headers=chatting.headers,
                     json={"websiteId": str(tenant.website_id), "rating": "happy"}).status_code == 200
    other_website, _ = tenant.add_website()
    me = http.get("/api/operators/me", headers=tenant.operator).json()["_id"]
    page = dashboard.sign_in().page
    page.get_by_role("link", name="Reports").click()
    page.wait_for_selector("parley-reports[data-ready]")
    table = page.get_by_role("table", name="By operator")
    row = table.locator(f"tr[data-id='{me}']")
    cells = row.locator("td").all_inner_texts()
    assert row.locator("th").inner_text() == tenant.operator_email
    assert cells[:2] == ["1", "1"]  # one conversation, one reply
    assert cells[2].endswith(" s") and cells[6] == "100 % (1 of 1)"
    for title, empty in (("By team", "No teams yet."), ("By label", "No labels yet.")):
        assert page.get_by_role("table", name=title).locator("td.empty").inner_text() == empty
    assert_accessible(page, axe_script, "the Reports page", EVERY_IMPACT)
    table.scroll_into_view_if_needed()
    screenshot(page, "reports-operators")

    with page.expect_download() as caught:
        page.locator("section[data-table='operators']").get_by_role("button", name="Download CSV").click()
    assert caught.value.suggested_filename == "operators.csv"
    header, *lines = list(csv.reader(io.StringIO(open(caught.value.path(), encoding="utf-8").read())))
    assert header[:4] == ["operatorId", "displayName", "conversations", "replies"]
    assert [line[:4] for line in lines] == [[me, tenant.operator_email, "1", "1"]]

    page.locator("#report-website").select_option(str(other_website))
    page.wait_for_function(f"() => document.querySelector(\"tr[data-id='{me}'] td\")?.textContent === '0'")
    assert row.locator("td").all_inner_texts()[6] == "—"
    dashboard.assert_clean()
