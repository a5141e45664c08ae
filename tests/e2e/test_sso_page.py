"""Single sign-on in a real browser against a real OpenID provider (`oidc-provider` on Node): an owner
configures it on the Organization page, then a teammate types their address on the sign-in page, clicks
"Sign in with …", signs in at the provider and lands in the dashboard, signed in."""

from __future__ import annotations


import pytest

from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures
from tests.support.oidc import CLIENT_ID, CLIENT_SECRET
from tests.support.servers import make_tenant

PASSWORD = "correct horse"  # what make_tenant gives every operator


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_an_owner_configures_sso_and_a_teammate_signs_in_with_it(page, sso_server, provider):
    owner = make_tenant(sso_server)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(sso_server.base_url + "/app/")
    page.get_by_label("E-mail").fill(owner.operator_email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="Organization").click()
    page.get_by_label("Issuer").fill(provider.issuer)
    page.get_by_label("Client id").fill(CLIENT_ID)
    page.get_by_label("Client secret").fill(CLIENT_SECRET)
    page.get_by_label("Allowed e-mail domains").fill("acme.test")
    page.get_by_label("Button label").fill("Acme ID")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved.").wait_for()
    assert page.get_by_label("Client secret").input_value() == ""  # never sent back to the page
    assert CLIENT_SECRET not in page.content()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_text("You are signed out.").wait_for()

    page.get_by_label("E-mail").fill("ada@acme.test")
    button = page.get_by_role("link", name="Sign in with Acme ID")
    button.wait_for()
    screenshot(page, "sso")
    button.click()
    page.get_by_label("Account").fill("ada")  # the provider's own login page
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/app/inbox")
    assert "sso-token" not in page.url
    assert page.locator("header .me").inner_text() == "ada@acme.test"
    assert page.evaluate("localStorage.getItem('parley.token')").startswith("pt_")
    assert not errors


def test_a_failed_single_sign_on_says_why_on_the_sign_in_page(page, sso_server, provider):
    owner = make_tenant(sso_server)
    with sso_server.client() as client:
        assert client.put("/api/organization/sso", json=provider.settings(allowedDomains=["acme.test"]),
                          headers=owner.operator).status_code == 200
    page.goto(f"{sso_server.base_url}/app/signin?org={owner.org_id}")
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.get_by_label("Account").fill("mallory")  # an address of another domain
    page.get_by_role("button", name="Continue").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "may not sign in" in alert.inner_text()
    assert "sso-error" not in page.url
