"""The operator's availability in the dashboard's header: chosen from the keyboard alone, seen by a colleague's
Operators page as it changes, and free of accessibility violations."""

from __future__ import annotations

from tests.e2e.test_dashboard import Dashboard
from tests.support.axe import EVERY_IMPACT, assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser  # noqa: F401 - fixture
from tests.support.servers import Tenant


def test_availability_is_chosen_with_the_keyboard_and_a_colleague_sees_it(browser, server, http, tenant, axe_script):
    admin = tenant.add_operator("admin")
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    other = browser.new_context(viewport={"width": 1280, "height": 860})  # its own storage: its own session
    try:
        dashboard = Dashboard(context, server, tenant).sign_in()
        page = dashboard.page
        control = page.locator(".availability")
        page.wait_for_function("() => document.querySelector('header .availability')?.dataset.status === 'online'")
        assert_accessible(page, axe_script, "the header with the availability control", EVERY_IMPACT)
        # the colleague's Operators page, live
        colleague = Dashboard(other, server, Tenant(**{**tenant.__dict__, "operator_email": admin.email}))
        colleague.sign_in()
        colleague.page.goto(colleague.url("/app/operators"))
        row = colleague.page.locator(f"tr:has(td:text-is('{tenant.operator_email}')) .availability")
        row.wait_for()
        assert row.get_attribute("data-status") == "online"
        # from the keyboard: Tab reaches the select (named by its label), a letter picks the choice
        page.bring_to_front()
        page.locator("header .brand").focus()
        for _ in range(4):
            if page.evaluate("() => document.activeElement?.id") == "availability":
                break
            page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement?.id") == "availability"
        assert page.get_by_label("Availability").count() == 1
        page.keyboard.press("o")  # Offline: the first choice whose label starts so after Online
        page.wait_for_function("() => document.querySelector('header .availability')?.dataset.status === 'offline'")
        assert control.get_attribute("data-status") == "offline"
        assert http.get("/api/operators/me/availability", headers=tenant.operator).json()["chosen"] == "offline"
        colleague.page.wait_for_function(
            "(email) => [...document.querySelectorAll('tr')].some((tr) => tr.textContent.includes(email) "
            "&& tr.querySelector('.availability')?.dataset.status === 'offline')", arg=tenant.operator_email)
        assert not dashboard.errors and not colleague.errors, dashboard.errors + colleague.errors
    finally:
        context.close()
        other.close()
