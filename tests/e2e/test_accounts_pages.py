"""Operators' accounts in the dashboard, in a real browser: an owner invites from the Operators page, the
invitee opens the link in another browser, sets a name and a password and lands signed in; the profile
changes the password and lists the sessions; a reset link sets a password."""

from __future__ import annotations

import pytest

from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures

PASSWORD = "correct horse"  # what conftest's make_tenant gives every operator
NEW_PASSWORD = "a much longer passphrase"


@pytest.fixture
def new_page(browser):
    """Each call: a page in a browser context of its own (another person's browser)."""
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("dialog", lambda dialog: dialog.accept())
        page.errors = errors
        return page
    yield make
    for context in contexts:
        context.close()


def signed_in(page, server, email: str, password: str = PASSWORD):
    page.goto(server.base_url + "/app/")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("parley-inbox[data-ready]")
    return page


def test_an_invitation_from_the_operators_page_to_the_first_sign_in(new_page, server, http, tenant):
    owner = signed_in(new_page(), server, tenant.operator_email)
    owner.click("nav >> text=Operators")
    owner.wait_for_selector("parley-operators tbody tr")
    # this server has no PARLEY_SMTP_URL: the page says the link is not mailed
    assert "E-mail is off on this server" in owner.text_content("parley-operators .notice[role=note]")
    email = f"invited-{tenant.org_id.hex[:8]}@example.com"
    owner.fill("#invite-email", email)
    owner.select_option("#invite-role", "agent")
    owner.get_by_role("button", name="Invite").click()
    url = owner.text_content(".secret-value")
    assert "/app/#/invite/" in url
    owner.wait_for_selector(f"tbody tr:has-text('{email}') >> text=invited")
    screenshot(owner, "operators")

    invitee = new_page()
    invitee.goto(url)
    invitee.get_by_label("Display name").fill("Bo Invited")
    invitee.get_by_label("Password").fill(NEW_PASSWORD)
    screenshot(invitee, "invitation")
    invitee.keyboard.press("Enter")  # the form by keyboard alone
    invitee.wait_for_selector("parley-inbox[data-ready]")
    assert invitee.text_content("header .me") == "Bo Invited"
    assert invitee.locator("nav a").all_text_contents() == ["Inbox", "Help documents", "Canned responses", "Reports"]
    assert "#" not in invitee.url  # the token left the address bar

    owner.reload()
    owner.wait_for_selector(f"tbody tr:has-text('{email}') >> text=active")
    again = http.post(f"/api/invitations/{url.rsplit('/', 1)[1]}/accept", json={"password": NEW_PASSWORD})
    assert again.status_code == 404
    assert owner.errors == [] and invitee.errors == []


def test_the_profile_changes_the_password_and_ends_a_session(new_page, server, http, tenant):
    agent = tenant.add_operator("agent")
    page = signed_in(new_page(), server, agent.email)
    page.click("header .me")
    page.wait_for_selector("parley-profile tbody tr")
    assert page.locator("tbody tr").count() == 2  # this browser, and the token the test made
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    page.wait_for_selector("text=your other sessions are signed out")
    page.wait_for_function("() => document.querySelectorAll('parley-profile tbody tr').length === 1")
    assert "(this session)" in page.text_content("tbody tr")
    assert http.get("/api/operators/me", headers=agent.headers).status_code == 401
    assert page.errors == []


def test_a_reset_link_sets_the_password(new_page, server, http, tenant):
    agent = tenant.add_operator("agent")
    link = http.post(f"/api/operators/{agent.id}/password-reset", headers=tenant.operator).json()
    page = new_page()
    page.goto(link["url"])
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Set password").click()
    page.wait_for_selector("text=Your password is set")
    signed_in(page, server, agent.email, NEW_PASSWORD)
    assert http.get("/api/operators/me", headers=agent.headers).status_code == 401  # every session ended
    assert page.errors == []
