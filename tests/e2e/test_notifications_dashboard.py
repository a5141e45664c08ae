"""The dashboard's notification centre in a real browser: the unread count in the title, the favicon and the
bell, updated live; marking all read; desktop notifications asked for only on a click (Playwright's
permission API grants them) and shown for a mention; the centre, its page and the hours editor pass axe."""

from __future__ import annotations

import pytest

from tests.e2e.test_dashboard import Dashboard
from tests.support.axe import assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures
from tests.support.visitors import Chatting

# Counts what the page asks of the Notification API and records what it shows, around the browser's own.
RECORD_NOTIFICATIONS = """
(() => {
  const Original = window.Notification;
  window.__asked = 0;
  window.__shown = [];
  if (!Original) return;
  class Recorded extends Original {
    constructor(title, options) {
      window.__shown.push({title, body: options && options.body});
      super(title, options);
    }
  }
  Object.defineProperty(Recorded, "permission", {get: () => Original.permission});
  Recorded.requestPermission = (...args) => { window.__asked += 1; return Original.requestPermission(...args); };
  window.Notification = Recorded;
})();
"""


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_init_script(RECORD_NOTIFICATIONS)
    yield context
    context.close()


def unread_is(page, count: int) -> None:
    page.wait_for_function("(n) => document.querySelector('#notifications-bell')?.dataset.unread === n",
                           arg=str(count))


def test_the_title_favicon_and_centre_count_new_notifications_live(context, server, tenant, http, axe_script):
    dashboard = Dashboard(context, server, tenant).sign_in()
    page = dashboard.page
    unread_is(page, 0)
    assert page.title() == "Inbox · Parley"
    first = Chatting(http, tenant)
    unread_is(page, 1)
    assert page.title() == "(1) Inbox · Parley"
    # the badge is drawn on the icon once the icon's own SVG is read
    page.wait_for_function("() => document.querySelector(\"link[rel='icon']\").href.startsWith('data:image/svg+xml')")
    Chatting(http, tenant).say('<img src=x onerror="window.__xss=1">')
    unread_is(page, 2)
    assert page.title() == "(2) Inbox · Parley"
    page.click("#notifications-bell")
    items = page.locator("#notification-panel .notification-list li.unread")
    items.first.wait_for()
    assert items.count() == 2
    assert page.get_by_text(f"New conversation on {tenant.website_name}").count() == 2
    assert_accessible(page, axe_script, "the open notification centre")
    screenshot(page, "notification-centre")
    with page.expect_response(lambda r: r.url.endswith("/api/notifications/read")):
        items.last.locator("a").click()
    page.wait_for_url(f"**/app/inbox/{first.conversation_id}")
    unread_is(page, 1)
    page.click("#notifications-bell")
    page.click("#mark-all-read")
    unread_is(page, 0)
    assert page.title().startswith("Inbox") or not page.title().startswith("(")
    assert page.get_attribute("link[rel='icon']", "href") == "/app/icon.svg"
    dashboard.assert_clean()


def test_desktop_notifications_are_asked_for_on_a_click_and_shown_for_a_mention(context, server, tenant, http,
                                                                                  axe_script):
    colleague = tenant.add_operator("agent")
    chat = Chatting(http, tenant)
    dashboard = Dashboard(context, server, tenant).sign_in()
    page = dashboard.page
    page.goto(dashboard.url("/app/notifications"))
    page.wait_for_selector("parley-notifications[data-ready]")
    page.goto(dashboard.url("/app/websites"))
    page.wait_for_selector(".hours form")
    assert page.evaluate("window.__asked") == 0  # never on load, whatever page
    page.goto(dashboard.url("/app/notifications"))
    page.wait_for_selector("parley-notifications[data-ready]")
    assert page.evaluate("window.__asked") == 0
    assert page.evaluate("Notification.permission") == "default"
    page.click("#enable-desktop")
    page.wait_for_function("() => window.__asked === 1")
    context.grant_permissions(["notifications"], origin=server.base_url)
    assert page.evaluate("Notification.permission") == "granted"
    note = http.post("/api/messages", headers=colleague.headers, json={
        "conversationId": chat.conversation_id, "content": f"@{tenant.operator_email} the refund code is QQ-SECRET",
        "from": "operator", "internal": True})
    assert note.status_code == 200, note.text
    page.wait_for_function("() => window.__shown.some((n) => n.title === 'Parley: Mention')")
    shown = [n for n in page.evaluate("window.__shown") if n["title"] == "Parley: Mention"]
    assert len(shown) == 1 and "QQ-SECRET" not in shown[0]["body"] and "mentioned you" in shown[0]["body"]
    assert page.evaluate("window.__asked") == 1
    page.locator("parley-notifications li[data-kind='mention']").wait_for()
    assert_accessible(page, axe_script, "the notifications page")
    screenshot(page, "notifications-page")
    dashboard.assert_clean()


def test_the_channels_are_saved_per_kind_and_the_hours_editor_saves_and_refuses(context, server, tenant, http,
                                                                                axe_script):
    dashboard = Dashboard(context, server, tenant).sign_in()
    page = dashboard.page
    page.goto(dashboard.url("/app/notifications"))
    page.wait_for_selector("#notification-preferences")
    page.get_by_label("New message: E-mail").check()
    page.get_by_label("New conversation: Desktop").uncheck()
    page.click("#notification-preferences button[type=submit]")
    page.get_by_text("Saved.").wait_for()
    saved = http.get("/api/operators/me/notifications", headers=tenant.operator).json()
    assert saved["message.new"]["email"] is True and saved["conversation.new"]["desktop"] is False
    page.goto(dashboard.url("/app/websites"))
    card = page.locator(f"[data-website='{tenant.website_name}'] .hours")
    card.locator("form").wait_for()
    card.get_by_label("Time zone").fill("Europe/Paris")
    assert card.get_by_label("Sunday").input_value() == "00:00-24:00"  # never set: always open
    for day in ("Tuesday", "Wednesday", "Thursday", "Friday", "Sunday"):
        card.get_by_label(day).fill("")
    card.get_by_label("Monday").fill("09:00-12:00, 13:00-17:00")
    card.get_by_label("Saturday").fill("22:00-02:00")
    card.get_by_label("Holidays").fill("2026-12-25")
    card.get_by_label("Away message").fill("We're away: back at nine.")
    card.get_by_role("button", name="Save hours").click()
    card.get_by_text("Saved.").wait_for()
    stored = http.get(f"/api/websites/{tenant.website_name}/hours", headers=tenant.operator).json()
    assert stored == {"timezone": "Europe/Paris", "weekly": {"mon": [["09:00", "12:00"], ["13:00", "17:00"]],
                                                             "sat": [["22:00", "02:00"]]},
                      "holidays": ["2026-12-25"], "awayMessage": "We're away: back at nine."}
    card.get_by_label("Time zone").fill("Mars/Olympus")
    card.get_by_role("button", name="Save hours").click()
    card.locator("[role=alert]").wait_for()
    assert http.get(f"/api/websites/{tenant.website_name}/hours", headers=tenant.operator).json() == stored
    assert_accessible(page, axe_script, "the websites page with business hours")
    dashboard.assert_clean()
