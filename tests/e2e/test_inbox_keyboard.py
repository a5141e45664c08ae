"""The inbox from the keyboard (j/k, Enter, `e`, `x`, `?`) and its bulk actions (select, resolve, mark spam),
the shortcuts dialog checked by axe; the Websites page's automatic-assignment control."""

from __future__ import annotations

import time

import pytest

from tests.e2e.test_dashboard import Dashboard
from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser  # noqa: F401 - fixture
from tests.support.inbox_seed import Seeder


@pytest.fixture
def dashboard(browser, server, tenant):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    yield Dashboard(context, server, tenant)
    context.close()


def flags(http, tenant, conversation_id) -> dict:
    return http.get(f"/api/conversations/{conversation_id}", headers=tenant.operator).json()


def eventually(check, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.1)


def rows(page) -> list[str]:
    return page.eval_on_selector_all(".conversations li[data-id]", "(items) => items.map((li) => li.dataset.id)")


def cursor(page) -> tuple[str | None, str | None]:
    """The row under the cursor, and the row holding the focus."""
    return tuple(page.evaluate("""() => [document.querySelector('.conversations li.cursor')?.dataset.id ?? null,
                                         document.activeElement?.closest('li[data-id]')?.dataset.id ?? null]"""))


def test_the_inbox_is_worked_from_the_keyboard(dashboard, server, http, tenant, axe_script):
    Seeder(server, tenant.org_id, tenant.website_id).conversations(3)
    page = dashboard.sign_in().page
    page.wait_for_function("() => document.querySelectorAll('.conversations li[data-id]').length === 3")
    shown = rows(page)
    page.keyboard.press("j")
    assert cursor(page) == (shown[0], shown[0])
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")  # stays on the last
    assert cursor(page) == (shown[2], shown[2])
    page.keyboard.press("k")
    assert cursor(page) == (shown[1], shown[1])
    page.keyboard.press("e")
    eventually(lambda: flags(http, tenant, shown[1])["resolved"])
    assert not flags(http, tenant, shown[0])["resolved"]
    page.keyboard.press("k")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/app/inbox/{shown[0]}")
    # the shortcuts, as an accessible dialog that Escape closes
    page.evaluate("() => document.activeElement?.blur()")
    page.keyboard.press("?")
    shortcuts = page.get_by_role("dialog", name="Keyboard shortcuts")
    shortcuts.wait_for()
    assert "Assign to me" in shortcuts.inner_text()
    assert_accessible(page, axe_script, "the keyboard shortcuts dialog", EVERY_IMPACT)
    page.keyboard.press("j")  # no shortcut runs behind the dialog
    page.keyboard.press("Escape")
    shortcuts.wait_for(state="detached")
    assert not dashboard.errors, dashboard.errors


def test_bulk_select_resolves_and_marks_spam(dashboard, server, http, tenant, axe_script):
    Seeder(server, tenant.org_id, tenant.website_id).conversations(4)
    page = dashboard.sign_in().page
    page.wait_for_function("() => document.querySelectorAll('.conversations li[data-id]').length === 4")
    shown = rows(page)
    bar = page.get_by_role("toolbar", name="Selected conversations")
    assert bar.is_hidden()
    # two by their checkboxes, one by `x`
    page.locator(f"li[data-id='{shown[0]}'] input.select").check()
    page.locator(f"li[data-id='{shown[1]}'] input.select").check()
    page.evaluate("() => document.activeElement?.blur()")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("x")
    assert bar.get_by_role("status").inner_text() == "3 selected"
    assert_accessible(page, axe_script, "the inbox with the bulk bar", EVERY_IMPACT)
    bar.get_by_role("button", name="Resolve").click()
    eventually(lambda: all(flags(http, tenant, c)["resolved"] for c in shown[:3]))
    assert not flags(http, tenant, shown[3])["resolved"]
    bar.wait_for(state="hidden")
    page.locator(f"li[data-id='{shown[3]}'] input.select").check()
    bar.get_by_role("button", name="Mark spam").click()
    eventually(lambda: flags(http, tenant, shown[3])["spam"])
    assert not any(flags(http, tenant, c)["spam"] for c in shown[:3])
    assert not dashboard.errors, dashboard.errors


def test_the_websites_page_sets_the_automatic_assignment(dashboard, http, tenant, axe_script):
    page = dashboard.sign_in("/app/websites").page
    page.goto(dashboard.url("/app/websites"))
    section = page.locator(f"[data-assignment='{tenant.website_name}']")
    section.get_by_label("Mode").wait_for()
    assert_accessible(page, axe_script, "the websites page with automatic assignment", EVERY_IMPACT)
    section.get_by_label("Mode").select_option("least-busy")
    section.get_by_label("Capacity per operator").fill("4")
    section.get_by_label("A reply by an operator takes an unassigned conversation").check()
    section.get_by_role("button", name="Save assignment").click()
    section.get_by_text("Saved.").wait_for()
    saved = http.get(f"/api/websites/{tenant.website_name}/assignment", headers=tenant.operator).json()
    assert (saved["mode"], saved["capacity"], saved["assignOnReply"]) == ("least-busy", 4, True)
    assert not dashboard.errors, dashboard.errors
