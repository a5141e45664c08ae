"""Two-factor sign-in in the dashboard, in a real browser: enrolment on the profile page by keyboard (the QR
code the service drew, the key, a code this test computes with pyotp, the ten recovery codes shown once),
then signing out and in again with a code, and with a recovery code that works once; and an organization
requiring it, which sends an operator without it to enrol before anything else."""

from __future__ import annotations

import time

import pyotp

from commands import admin
from tests.e2e.test_dashboard import PASSWORD, Dashboard, context, dashboard  # noqa: F401 - fixtures
from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures


def enrol_in_the_dashboard(dashboard: Dashboard) -> tuple[pyotp.TOTP, list[str]]:
    page = dashboard.page
    page.click("header a.me")  # the operator's name opens their profile
    page.wait_for_selector("parley-profile[data-ready]")
    page.get_by_role("button", name="Turn on two-factor sign-in").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("img.qr")
    page.wait_for_function("() => document.querySelector('img.qr').naturalWidth > 0")  # the service's SVG drew
    secret = page.text_content("#totp-secret").replace(" ", "")
    totp = pyotp.TOTP(secret)
    page.locator("#two-factor-title").evaluate("title => title.scrollIntoView()")  # the enrolment, whole
    screenshot(page, "two-factor")
    assert page.evaluate("document.activeElement.id") == "totp-code"  # ready to type, no mouse needed
    page.keyboard.type(totp.now())
    page.keyboard.press("Enter")
    page.wait_for_selector(".recovery-codes")
    codes = [text.strip() for text in page.locator(".recovery-codes li").all_text_contents()]
    assert len(codes) == 10
    page.get_by_role("button", name="Done").click()
    page.get_by_text("On: sign-in asks for a code").wait_for()
    return totp, codes


def sign_out(dashboard: Dashboard) -> None:
    dashboard.page.click("#sign-out")
    dashboard.page.wait_for_selector("form.signin")


def sign_in_with_code(dashboard: Dashboard, code: str) -> None:
    """The password first; the page then asks for the code, as the server's 401 two-factor-required says."""
    page = dashboard.page
    page.get_by_label("E-mail").fill(dashboard.tenant.operator_email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    asked = page.get_by_label("Two-factor code")
    asked.wait_for()
    assert page.evaluate("document.activeElement.name") == "totp"
    asked.fill(code)
    page.get_by_role("button", name="Sign in").click()


def test_enrol_in_the_dashboard_then_sign_in_with_a_code_and_a_recovery_code_once(dashboard, http, tenant):
    dashboard.sign_in()
    totp, codes = enrol_in_the_dashboard(dashboard)
    assert http.get("/api/operators/me/totp", headers=tenant.operator).json()["enrolled"] is True
    # the owner requires it of the whole organization, on the Organization page
    dashboard.page.get_by_role("link", name="Organization").click()
    dashboard.page.get_by_label("Require two-factor sign-in for every operator").check()
    dashboard.page.get_by_role("button", name="Apply to the organization").click()
    dashboard.page.get_by_text("Saved: every operator needs two-factor sign-in").wait_for()
    assert http.get("/api/operators/me/totp", headers=tenant.operator).json() == {"enrolled": True, "required": True}

    sign_out(dashboard)
    sign_in_with_code(dashboard, totp.at(time.time() + totp.interval))  # the next step's: each passes once
    dashboard.wait_ready()

    sign_out(dashboard)
    sign_in_with_code(dashboard, codes[0])
    dashboard.wait_ready()

    sign_out(dashboard)
    sign_in_with_code(dashboard, codes[0])
    dashboard.page.get_by_text("Wrong code, or a code already used").wait_for()
    assert dashboard.token() is None
    dashboard.assert_clean()


def test_an_organization_requiring_it_sends_an_operator_without_it_to_enrol(context, server, http, tenant):
    totp = pyotp.TOTP(http.post("/api/operators/me/totp", headers=tenant.operator).json()["secret"])
    assert http.post("/api/operators/me/totp/confirm", json={"code": totp.now()},
                     headers=tenant.operator).status_code == 200
    assert http.put("/api/organization/security", json={"requireTwoFactor": True},
                    headers=tenant.operator).status_code == 200
    store = server.store()
    try:
        created, _ = admin.create_operator(store, tenant.org_id, "enrol-" + tenant.operator_email, PASSWORD)
    finally:
        store.close()
    server.wait_projected(created.position)
    newcomer = Dashboard(context, server, type(tenant)(**{**vars(tenant),
                                                          "operator_email": "enrol-" + tenant.operator_email}))
    page = newcomer.page
    page.goto(newcomer.url("/app/"))
    page.get_by_label("E-mail").fill(newcomer.tenant.operator_email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Your organization requires two-factor sign-in").wait_for()
    assert page.locator("nav a").all_text_contents() == ["Profile"]
    assert page.url.endswith("/app/profile")
    page.get_by_role("button", name="Turn on two-factor sign-in").click()
    secret = page.text_content("#totp-secret").replace(" ", "")
    page.get_by_label("Code shown by the app").fill(pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_selector(".recovery-codes")
    page.get_by_role("button", name="Done").click()
    newcomer.wait_ready()  # the whole dashboard, with the same token
    assert "Inbox" in page.locator("nav a").all_text_contents()
    newcomer.assert_clean()
