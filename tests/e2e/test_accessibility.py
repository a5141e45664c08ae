"""axe-core finds no violation at all on any dashboard page (sign-in included), each with content on it (a
conversation with messages, a document, a key, a webhook, a campaign), and no critical or serious one in the
widget or the mascot (the test's host page around them is not ours to judge)."""

from __future__ import annotations

import pytest

from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, host_pages  # noqa: F401 - fixtures
from tests.support.servers import make_server, make_tenant
from tests.e2e.test_dashboard import Dashboard
from tests.e2e.test_mascot import PET_SELECTOR, at_rest, mascot_page
from tests.support.visitors import Chatting
from tests.support.widget_pages import eventually, host_page

# each dashboard page, and what shows once its content is on screen
PAGES = {"inbox": ".conversations li[data-id]", "documents": "tbody tr", "webhooks": "section[data-id]",
         "keys": "tbody tr", "websites": "section[data-website]", "campaigns": "section[data-id]",
         "reports": "parley-reports[data-ready] svg",
         "notifications": "parley-notifications[data-ready] .notification-list li"}


@pytest.fixture(scope="module")
def local_server(infra, tmp_path_factory):
    """Webhooks may point at this machine: the webhooks page gets a subscription to show."""
    server = make_server(infra, tmp_path_factory.mktemp("a11y"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def seeded(local_server):
    tenant = make_tenant(local_server)
    website = str(tenant.website_id)
    with local_server.client() as http:
        chatting = Chatting(http, tenant)
        chatting.say("Where is my order?")
        sent = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chatting.conversation_id, "content": "Let me look", "from": "operator"})
        assert sent.status_code == 200, sent.text
        for path, body in (
                ("/api/documents", {"websiteId": website, "title": "Shipping times", "content": "Two days."}),
                ("/api/webhooksubscriptions", {"websiteId": website, "url": "http://127.0.0.1:9/hook",
                                               "events": ["customer.created"]}),
                ("/api/campaigns", {"websiteId": website, "name": "Spring", "content": "20% off", "audience": {}})):
            answer = http.post(path, headers=tenant.operator, json=body)
            assert answer.status_code == 200, (path, answer.text)
    tenant.new_key()
    return tenant, chatting


def test_every_dashboard_page_and_the_sign_in(browser, local_server, seeded, axe_script):
    tenant, chatting = seeded
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        dashboard = Dashboard(context, local_server, tenant)
        page = dashboard.page
        page.goto(dashboard.url())
        page.wait_for_selector("form.signin")
        assert_accessible(page, axe_script, "the sign-in page", EVERY_IMPACT)
        dashboard.sign_in()
        for name, ready in PAGES.items():
            page.goto(dashboard.url(f"/app/{name}"))
            page.wait_for_selector(ready)
            assert_accessible(page, axe_script, f"the {name} page", EVERY_IMPACT)
        page.goto(dashboard.url(f"/app/inbox/{chatting.conversation_id}"))
        page.wait_for_selector(".transcript .message.operator")
        assert_accessible(page, axe_script, "a conversation", EVERY_IMPACT)
    finally:
        context.close()


def test_the_widget_open(browser, host_pages, local_server, seeded, axe_script):
    tenant, _ = seeded
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(host_page(host_pages, "a11y-widget", local_server.base_url, tenant.website_id,
                            queued=[["sendMessage", "Hello"], ["openChat"]]))
        page.locator("[data-parley=widget] .log .text", has_text="Hello").wait_for()
        assert_accessible(page, axe_script, "the open widget")
    finally:
        context.close()


def test_the_mascot_at_rest_and_open(browser, host_pages, local_server, seeded, axe_script):
    tenant, _ = seeded
    context = browser.new_context()
    try:
        page = context.new_page()
        mascot_page(page, host_pages, local_server, tenant, "a11y-mascot", queued=[["sendMessage", "Hello, Pip"]])
        at_rest(page)
        assert_accessible(page, axe_script, "the mascot at rest")
        page.evaluate("window.$parley.push(['openChat'])")
        eventually(lambda: page.locator(PET_SELECTOR).get_attribute("aria-expanded") == "true")
        page.locator("[data-parley=mascot] .log .text", has_text="Hello, Pip").wait_for()
        assert_accessible(page, axe_script, "the mascot's open bubble")
    finally:
        context.close()
