"""The dashboard's audit log in a real browser: the changes an operator made listed with who and where,
secrets masked, the filters, and the CSV download."""

from __future__ import annotations

import pytest

from tests.support.browser import browser, screenshot  # noqa: F401 - fixtures

PASSWORD = "correct horse"  # what make_tenant gives every operator


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def test_the_audit_page_lists_changes_filters_and_downloads(page, server, http, tenant):
    hook = http.post("/api/webhooksubscriptions", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "url": "https://93.184.216.34/in/canary-path-token"})
    assert hook.status_code == 200, hook.text
    secret = hook.json()["secret"]
    assert http.put(f"/api/websites/{tenant.website_name}", headers=tenant.operator,
                    json={"brandColor": "#0a7d4f"}).status_code == 200
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(server.base_url + "/app/")
    page.get_by_label("E-mail").fill(tenant.operator_email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="Audit log").click()
    page.wait_for_selector("#audit-table tbody tr")
    table = page.locator("#audit-table")
    assert table.locator("tr", has_text="webhook.created").count() == 1
    website_row = table.locator("tr", has_text="website.updated")
    assert "#123456 → #0a7d4f" in website_row.inner_text()
    assert f"Operator: {tenant.operator_email}" in website_row.inner_text()
    assert "***" in table.inner_text()
    assert secret not in page.content() and "canary-path-token" not in page.content()
    screenshot(page, "audit")

    page.get_by_label("Kind").select_option("webhook.*")
    page.get_by_role("button", name="Show").click()
    page.wait_for_function("() => ![...document.querySelectorAll('#audit-table tbody tr')]"
                           ".some((row) => row.textContent.includes('website.updated'))")
    assert table.locator("tbody tr").count() == 1

    with page.expect_download() as caught:
        page.get_by_role("button", name="Download CSV").click()
    downloaded = caught.value
    assert downloaded.suggested_filename == "audit.csv"
    text = open(downloaded.path(), encoding="utf-8").read()
    assert text.startswith("_id,at,actorKind") and "webhook.created" in text and "website.updated" not in text
    assert secret not in text
    assert not errors
