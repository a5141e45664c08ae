"""What a first-time operator tripped over in the dashboard, each in a real browser: the AI agent's control
only where there is an agent, spam only once confirmed, readable report axes and counts, a campaign's
preview naming its visitors and showing the message, and the navigation whole at a phone's width."""

from __future__ import annotations

import time

import pytest

from tests.support.browser import browser  # noqa: F401 - fixture
from tests.support.servers import make_server, make_tenant
from tests.support.receivers import Answer, Receiver
from tests.e2e.test_dashboard import Dashboard
from tests.support.visitors import Chatting


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    yield context
    context.close()


def conversation_of(http, tenant, conversation_id) -> dict:
    return http.get(f"/api/conversations/{conversation_id}", headers=tenant.operator).json()


def test_no_agent_control_without_an_agent_and_spam_only_once_confirmed(context, server, http, tenant):
    visitor = Chatting(http, tenant)
    visitor.say("Anyone there?")
    page = Dashboard(context, server, tenant).sign_in().page
    page.click(f".conversations li[data-id='{visitor.conversation_id}'] a")
    page.wait_for_selector(".transcript .message.customer")
    assert page.locator("#agent").count() == 0
    page.fill("#composer-text", "Yes, hello")
    page.keyboard.press("Enter")
    page.wait_for_selector(".transcript .message.operator >> text=Yes, hello")
    assert page.locator("#agent").count() == 0  # a reply pauses the agent, but there is none to resume

    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.click("#spam")
    page.wait_for_timeout(500)
    assert questions and "spam" in questions[0]
    assert page.locator("#spam").text_content() == "Mark as spam"
    assert conversation_of(http, tenant, visitor.conversation_id)["spam"] is False

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#spam")
    page.locator("#spam", has_text="Not spam").wait_for()
    assert conversation_of(http, tenant, visitor.conversation_id)["spam"] is True
    page.click("#spam")  # back out of spam: no question asked
    page.locator("#spam", has_text="Mark as spam").wait_for()


def test_the_first_response_axis_reads_for_sub_second_answers(context, server, http, tenant):
    visitor = Chatting(http, tenant)
    visitor.say("Quick question")
    assert http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": visitor.conversation_id, "content": "Quick answer", "from": "operator"}).status_code == 200
    deadline = time.monotonic() + 30
    while not any(day["medianFirstResponseSeconds"] is not None for day in http.get(
            "/api/reports", headers=tenant.operator, params={"days": 7, "timezone": "UTC"}).json()["days"]):
        assert time.monotonic() < deadline, "the report never counted the reply"
        time.sleep(0.2)
    page = Dashboard(context, server, tenant).sign_in().page
    page.click("nav >> text=Reports")
    page.wait_for_selector("parley-reports[data-ready] svg")
    chart = page.locator("figure.chart", has_text="Median first response")
    ticks = chart.locator("svg > text").all_text_contents()[:3]  # the y axis: 0, half the top, the top
    assert len(set(ticks)) == 3, ticks


def test_a_campaign_preview_names_its_visitors_and_shows_the_message(context, server, http, tenant):
    visitor = Chatting(http, tenant)
    visitor.say("hi")
    assert http.put("/api/chat/profile", headers=visitor.headers, json={"nickname": "Ada"}).status_code == 200
    website = str(tenant.website_id)
    assert http.post("/api/campaigns", headers=tenant.operator, json={
        "websiteId": website, "name": "Spring", "content": "20% off this week", "audience": {}}).status_code == 200
    page = Dashboard(context, server, tenant).sign_in().page
    page.click("nav >> text=Campaigns")
    card = page.locator("section[data-id]").first
    card.get_by_role("button", name="Preview audience").click()
    card.locator("text=such as Ada").wait_for()
    assert card.locator(".campaign-look .message.operator .content").text_content() == "20% off this week"


@pytest.fixture(scope="module")
def hooks_server(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("ux-hooks"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield server
    server.stop()


def test_one_failed_delivery_is_one_failure(context, hooks_server):
    tenant = make_tenant(hooks_server)
    with hooks_server.client() as http, Receiver(lambda n: Answer(status=400)) as receiver:
        subscription = http.post("/api/webhooksubscriptions", headers=tenant.operator, json={
            "websiteId": str(tenant.website_id), "url": receiver.url, "events": ["customer.created"]}).json()
        assert http.post("/api/customers", headers=tenant.operator,
                         json={"websiteId": str(tenant.website_id)}).status_code == 200
        receiver.wait_for(1)
        deadline = time.monotonic() + 30
        while [s["consecutiveFailures"] for s in http.get("/api/webhooksubscriptions", headers=tenant.operator).json()
               if s["_id"] == subscription["_id"]] != [1]:
            assert time.monotonic() < deadline, "the failure was never counted"
            time.sleep(0.2)
    page = Dashboard(context, hooks_server, tenant).sign_in().page
    page.click("nav >> text=Webhooks")
    page.locator("section[data-id]", has_text="1 failure in a row").wait_for()


def test_the_navigation_and_the_header_whole_at_a_phone_s_width(browser, server, tenant):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = Dashboard(context, server, tenant).sign_in().page
        links = page.locator("nav[aria-label=Main] a")
        assert links.count() == 12  # an owner's every page, API keys to Organization
        for index in range(links.count()):
            box = links.nth(index).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, links.nth(index).text_content()
        header = page.locator("header.top").bounding_box()
        sign_out = page.locator("#sign-out").bounding_box()
        brand = page.locator("header.top .brand").bounding_box()
        # one line: the sign-out button sits beside the brand, not wrapped under it
        assert sign_out["y"] < brand["y"] + brand["height"] and header["height"] < 2 * sign_out["height"] + 16
    finally:
        context.close()
