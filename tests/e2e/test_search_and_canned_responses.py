"""The dashboard's search box and canned responses in a real browser: results with the matches marked (user
text never run as markup), reached and opened by keyboard; the composer's "/" menu (arrow keys, Enter,
Escape) inserting a response with its placeholders filled; the management page; axe on each."""

from __future__ import annotations

import uuid

from tests.e2e.test_dashboard import XSS, Dashboard, context, dashboard  # noqa: F401 - fixtures
from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, screenshot  # noqa: F401 - fixture
from tests.support.visitors import Chatting


def test_the_search_box_finds_marks_and_opens_by_keyboard(dashboard, http, tenant, axe_script):
    word = "parcel" + uuid.uuid4().hex[:6]
    visitor = Chatting(http, tenant)
    visitor.say(f"My {word} never came {XSS}")
    other = Chatting(http, tenant)
    other.say("nothing to see")
    dashboard.sign_in()
    page = dashboard.page
    page.get_by_role("searchbox", name="Search conversations").fill(word)
    page.keyboard.press("Enter")
    page.wait_for_selector("parley-search[data-ready] .search-results li")
    results = page.locator(".search-results li")
    assert results.count() == 1
    assert results.first.locator("mark").text_content() == word
    assert XSS in results.first.locator(".snippet").text_content()  # the visitor's markup, as text
    assert_accessible(page, axe_script, "the search results", EVERY_IMPACT)
    screenshot(page, "search")
    # the filters narrow it, and are kept in the address
    page.get_by_label("Status").select_option("true")
    page.get_by_text("Nothing found for").wait_for()
    assert "resolved=true" in page.url
    page.get_by_label("Status").select_option("false")
    page.wait_for_selector("parley-search[data-ready] .search-results li")
    assert page.locator(".search-results li").count() == 1
    # down from the box to the result, Enter opens the conversation
    page.get_by_role("searchbox", name="Search conversations").focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.closest('li')?.dataset.conversation") == visitor.conversation_id
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/app/inbox/{visitor.conversation_id}")
    page.wait_for_selector(f".transcript .message.customer >> text={word}")
    # nothing found is said so
    page.get_by_role("searchbox", name="Search conversations").fill("zzqqxxnothing")
    page.keyboard.press("Enter")
    page.get_by_text("Nothing found for").wait_for()
    dashboard.assert_clean()


def test_the_slash_menu_inserts_a_canned_response(dashboard, http, tenant, axe_script):
    colleague = tenant.add_operator("agent")
    for body, headers in (
            ({"shortcut": "refund", "content": "Hello {{visitor.name}}, your refund is on its way. {{operator.name}}"},
             tenant.operator),
            ({"shortcut": "reship", "content": "We will ship it again."}, tenant.operator),
            ({"shortcut": "rest", "content": "a colleague's own"} | {"personal": True}, colleague.headers)):
        assert http.post("/api/cannedresponses", headers=headers, json=body).status_code == 200
    visitor = Chatting(http, tenant)
    visitor.say("Where is my money?")
    assert http.put("/api/chat/profile", headers=visitor.headers, json={"nickname": "Ada"}).status_code == 200
    dashboard.sign_in()
    page = dashboard.page
    page.goto(dashboard.url(f"/app/inbox/{visitor.conversation_id}"))
    page.wait_for_selector(".transcript .message.customer")
    composer = page.locator("#composer-text")
    composer.click()
    page.keyboard.type("/re")
    menu = page.get_by_role("listbox", name="Insert a canned response")
    menu.wait_for()
    # the organization's two; the colleague's personal one is theirs only
    assert [option.get_attribute("data-canned") is not None for option in menu.get_by_role("option").all()] == [True, True]
    assert menu.get_by_role("option").all_text_contents()[0].startswith("/refund")
    assert composer.get_attribute("aria-activedescendant") == "suggestion-0"
    assert_accessible(page, axe_script, "the composer's canned responses menu", EVERY_IMPACT)
    screenshot(page, "canned-responses-menu")
    page.keyboard.press("ArrowDown")
    assert composer.get_attribute("aria-activedescendant") == "suggestion-1"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Escape")
    assert menu.is_hidden()
    assert composer.input_value() == "/re"  # Escape closes the menu, the text stays
    page.keyboard.type("f")
    menu.wait_for()
    assert menu.get_by_role("option").count() == 1
    page.keyboard.press("Enter")  # inserts, does not send
    me = http.get("/api/operators/me", headers=tenant.operator).json()
    expected = f"Hello Ada, your refund is on its way. {me.get('displayName') or me['email']}"
    assert composer.input_value() == expected
    page.keyboard.press("Enter")  # now sends
    page.wait_for_selector(f".transcript .message.operator >> text={expected}")
    assert expected in [m["content"] for m in visitor.transcript()]
    dashboard.assert_clean()


def test_the_canned_responses_page(dashboard, http, tenant, axe_script):
    dashboard.sign_in()
    page = dashboard.page
    page.goto(dashboard.url("/app/cannedresponses"))
    page.wait_for_selector("parley-cannedresponses[data-ready]")
    page.get_by_label("Shortcut").fill("/Hours")
    page.get_by_label("Text").fill(f"We answer 9 to 5. {XSS}")
    page.get_by_role("button", name="Save response").click()
    row = page.locator(".canned-list tr", has_text="/hours")
    row.wait_for()
    assert XSS in row.locator(".content").text_content()
    # the same shortcut again is refused, and said so
    page.get_by_label("Shortcut").fill("hours")
    page.get_by_label("Text").fill("again")
    page.get_by_role("button", name="Save response").click()
    page.get_by_role("alert").get_by_text("is taken").wait_for()
    assert_accessible(page, axe_script, "the canned responses page", EVERY_IMPACT)
    screenshot(page, "canned-responses")
    page.get_by_role("button", name="Edit /hours").click()
    page.get_by_label("Text").fill("We answer 8 to 6.")
    page.get_by_role("button", name="Save response").click()
    page.locator(".canned-list tr", has_text="We answer 8 to 6.").wait_for()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete /hours").click()
    page.get_by_text("No canned responses yet.").wait_for()
    # one made elsewhere shows up live (the realtime frame names it, the page reads its list again)
    assert http.post("/api/cannedresponses", headers=tenant.operator,
                     json={"shortcut": "elsewhere", "content": "made by the API"}).status_code == 200
    page.locator(".canned-list tr", has_text="/elsewhere").wait_for()
    dashboard.assert_clean()
