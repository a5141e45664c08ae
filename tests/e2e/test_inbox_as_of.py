"""The dashboard's "as of" control, by keyboard: the inbox and its counts as they were before a resolve,
marked read only, the conversation opened from it without composer or actions, and back to now."""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

import pytest

from tests.e2e.test_dashboard import Dashboard, tab_to
from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures
from tests.support.visitors import Chatting


@pytest.fixture
def dashboard(browser, server, tenant):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, timezone_id="UTC", locale="en-US")
    yield Dashboard(context, server, tenant)
    context.close()


def test_the_inbox_as_it_was_before_a_resolve(dashboard, http, tenant, axe_script):
    first, second = Chatting(http, tenant), Chatting(http, tenant)
    first.say("hello")
    said = second.say("anyone there?")
    # the control counts in whole seconds: the resolve comes after the second the past is read at
    before = math.ceil(datetime.fromisoformat(said["creationTime"]).timestamp())
    time.sleep(max(0.0, before + 1.2 - time.time()))
    assert http.patch(f"/api/conversations/{first.conversation_id}", headers=tenant.operator,
                      json={"resolved": True}).status_code == 200
    page = dashboard.sign_in().page
    dashboard.wait_count("resolved", 1)

    tab_to(page, "#as-of")
    at = datetime.fromtimestamp(before, timezone.utc)
    # Chromium's en-US date-time field, segment by segment: month, day, year (which takes more digits: the
    # arrow moves on), hours, minutes, seconds, AM/PM
    page.keyboard.type(at.strftime("%m%d%Y"))
    page.keyboard.press("ArrowRight")
    page.keyboard.type(at.strftime("%I%M%S") + at.strftime("%p")[0])
    dashboard.wait_count("resolved", 0)
    assert dashboard.counts()["unresolved"] == 2
    assert "asOf=" in page.url
    notice = page.locator(".list-pane .past-notice")
    assert notice.inner_text().startswith("Read only:")
    assert page.locator("parley-inbox.past").count() == 1

    page.locator(f".conversations li[data-id='{first.conversation_id}'] a").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("parley-conversation .transcript .message.customer")
    conversation = page.locator("parley-conversation")
    conversation.locator(".past-notice").wait_for()
    assert conversation.locator("#composer-text").count() == 0 and conversation.locator("#resolve").count() == 0
    assert "Open then" in conversation.locator(".conversation-header").inner_text()
    assert_accessible(page, axe_script, "the inbox as of a past time", EVERY_IMPACT)
    screenshot(page, "inbox-as-of")

    tab_to(page, "#as-of-now")
    page.keyboard.press("Enter")
    dashboard.wait_count("resolved", 1)
    assert page.locator("parley-inbox.past").count() == 0 and "asOf=" not in page.url
    page.wait_for_selector("parley-conversation #resolve")
    dashboard.assert_clean()
