"""The dashboard's conversation page with rich messages: Markdown rendered and inert, the emoji picker,
and editing and deleting the operator's own reply by keyboard, in a real browser."""

from __future__ import annotations

import pytest

from tests.e2e.test_dashboard import Dashboard
from tests.support.axe import assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, screenshot  # noqa: F401 - fixture
from tests.support.visitors import Chatting


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    yield context
    context.close()


def test_markdown_emoji_edit_and_delete_in_the_conversation_page(context, server, http, tenant, axe_script):
    visitor = Chatting(http, tenant)
    visitor.say("Hi, **is** this <script>window.hacked = 1</script> safe?")
    page = Dashboard(context, server, tenant).sign_in().page
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    page.click(f".conversations li[data-id='{visitor.conversation_id}'] a")
    page.wait_for_selector(".transcript .message.customer strong")
    assert page.evaluate("window.hacked") is None
    assert page.locator(".transcript script").count() == 0

    page.fill("#composer-text", "It is safe ")
    page.get_by_role("button", name="Insert an emoji").click()
    page.locator(".emoji").first.wait_for()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    assert page.input_value("#composer-text") == "It is safe \U0001F601"
    page.keyboard.press("Enter")
    mine = page.locator(".transcript .message.operator").last
    mine.locator(".content", has_text="It is safe").wait_for()

    mine.get_by_role("button", name="Edit").focus()
    page.keyboard.press("Enter")
    editor = mine.get_by_label("Edit message")
    editor.wait_for()
    editor.fill("It is **safe**.")
    page.keyboard.press("Enter")
    page.locator(".transcript .message.operator .content strong", has_text="safe").wait_for()
    message_id = page.locator(".transcript .message.operator").last.get_attribute("data-id")
    assert http.get(f"/api/messages/{message_id}", headers=tenant.operator).json()["content"] == "It is **safe**."
    page.get_by_role("button", name="Insert an emoji").click()
    page.locator(".emoji").first.wait_for()
    assert_accessible(page, axe_script, "the conversation page with its emoji picker open")
    page.keyboard.press("Escape")

    page.locator(".transcript .message.operator").last.get_by_role("button", name="Delete").click()
    page.locator(".transcript .message.operator .content.removed", has_text="Message removed").wait_for()
    assert dialogs and "Delete this message" in dialogs[-1]
    assert http.get(f"/api/messages/{message_id}", headers=tenant.operator).json()["deleted"] is True
    screenshot(page, "dashboard-edit-delete")
