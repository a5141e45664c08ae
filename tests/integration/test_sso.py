"""Single sign-on with OpenID Connect, end to end against a real provider (`oidc-provider` on Node, started
here): the settings (owners only, the client secret never shown), the sign-in through the provider with
httpx following the redirects, and each refusal (an unallowed domain, an unverified address, a replayed
callback, another browser, a disabled operator)."""

from __future__ import annotations

import uuid
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from commands import admin
from tests.support.oidc import CLIENT_SECRET, sign_in
from tests.support.servers import Server, Tenant, make_tenant, token


@pytest.fixture(scope="module")
def org(sso_server, provider) -> Tenant:
    tenant = make_tenant(sso_server)
    with sso_server.client() as client:
        answer = client.put("/api/organization/sso", json=provider.settings(), headers=tenant.operator)
    assert answer.status_code == 200, answer.text
    return tenant


def landing(response: httpx.Response) -> dict[str, str]:
    """The callback's landing: /app/ with `sso-token` or `sso-error` in the fragment."""
    assert response.status_code == 302, response.text
    parts = urlsplit(response.headers["location"])
    assert parts.path == "/app/" and not parts.query
    name, _, value = parts.fragment.partition("=")
    return {name: unquote(value)}


def signed_in(sso_server: Server, org: Tenant, account: str, client: httpx.Client | None = None) -> dict[str, str]:
    with client or httpx.Client(timeout=30) as browser:
        return landing(browser.get(sign_in(browser, sso_server.base_url, org.org_id, account)))


def test_the_settings_are_the_owners_and_never_show_the_secret(sso_server, provider, org):
    with sso_server.client() as client:
        shown = client.get("/api/organization/sso", headers=org.operator)
        assert shown.status_code == 200
        assert shown.json() == {"issuer": provider.issuer, "clientId": "parley-test", "allowedDomains": ["acme.test"],
                                "defaultRole": "agent", "buttonLabel": "Acme ID", "enabled": True,
                                "clientSecretSet": True}
        # the secret is write-only: a change without it keeps it (the sign-ins below use it)
        kept = client.put("/api/organization/sso", json={k: v for k, v in provider.settings().items()
                                                         if k != "clientSecret"}, headers=org.operator)
        assert kept.status_code == 200 and "clientSecret" not in kept.json()
        admin_colleague = org.add_operator("admin")
        assert client.get("/api/organization/sso", headers=admin_colleague.headers).status_code == 403
        assert client.put("/api/organization/sso", json=provider.settings(),
                          headers=admin_colleague.headers).status_code == 403
        owner_role = client.put("/api/organization/sso", json=provider.settings(defaultRole="owner"),
                                headers=org.operator)
        assert owner_role.status_code == 400 and owner_role.json()["field"] == "defaultRole"
        wrong_issuer = client.put("/api/organization/sso", json=provider.settings(issuer=provider.issuer + "/nope"),
                                  headers=org.operator)
        assert wrong_issuer.status_code == 400 and wrong_issuer.json()["field"] == "issuer"
        for path, headers in (("/api/events", org.key("events:read")), ("/api/audit", org.operator)):
            answer = client.get(path, headers=headers)
            assert answer.status_code == 200 and CLIENT_SECRET not in answer.text
        assert any(entry["action"] == "sso.configured" for entry in client.get(
            "/api/audit", headers=org.operator).json()["items"])


def test_the_sign_in_page_finds_the_button_by_e_mail_domain(sso_server, org):
    with sso_server.client() as client:
        found = client.get("/api/sso/discover", params={"email": "someone@ACME.test"})
        assert found.status_code == 200
        assert found.json() == {"organizationId": str(org.org_id), "buttonLabel": "Acme ID",
                                "startUrl": f"/api/sso/{org.org_id}/start"}
        assert client.get("/api/sso/discover", params={"organizationId": str(org.org_id)}).status_code == 200
        assert client.get("/api/sso/discover", params={"email": "x@elsewhere.test"}).status_code == 404


def test_a_verified_address_signs_in_as_a_new_operator_with_the_default_role(sso_server, org):
    with httpx.Client(timeout=30) as browser:
        callback = sign_in(browser, sso_server.base_url, org.org_id, "ada")
        query = dict(part.split("=", 1) for part in urlsplit(callback).query.split("&"))
        assert {"state", "code"} <= query.keys()
        landed = landing(browser.get(callback))
        assert "sso-token" in landed, landed
        with sso_server.client() as client:
            me = client.get("/api/operators/me", headers=token(landed["sso-token"]))
            assert me.status_code == 200
            assert me.json()["email"] == "ada@acme.test" and me.json()["role"] == "agent"
            session = client.get("/api/operators/sessions/current", headers=token(landed["sso-token"])).json()
            assert session["organizationId"] == str(org.org_id)
        # the same callback again: its state was used
        replayed = landing(browser.get(callback))
        assert "already used" in replayed["sso-error"]
    # a second sign-in of the same person is the same operator
    again = signed_in(sso_server, org, "ada")
    with sso_server.client() as client:
        assert client.get("/api/operators/me", headers=token(again["sso-token"])).json()["_id"] == me.json()["_id"]


def test_the_start_asks_for_pkce_s256_a_state_and_a_nonce(sso_server, org):
    with httpx.Client(timeout=30) as browser:
        started = browser.get(f"{sso_server.base_url}/api/sso/{org.org_id}/start")
    assert started.status_code == 302
    query = dict(part.split("=", 1) for part in urlsplit(started.headers["location"]).query.split("&"))
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["state"] and query["nonce"] and query["response_type"] == "code"
    cookie = started.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/api/sso/callback" in cookie


def test_a_callback_in_another_browser_is_refused(sso_server, org):
    with httpx.Client(timeout=30) as browser:
        callback = sign_in(browser, sso_server.base_url, org.org_id, "ada")
    with httpx.Client(timeout=30) as other:
        assert "another browser" in landing(other.get(callback))["sso-error"]


def test_an_address_of_another_domain_is_refused(sso_server, org):
    assert "may not sign in" in signed_in(sso_server, org, "mallory")["sso-error"]


def test_an_unverified_address_is_refused(sso_server, org):
    assert "not verified" in signed_in(sso_server, org, "unverified")["sso-error"]


def test_an_operator_of_another_organization_joins_with_the_default_role(sso_server, org):
    elsewhere = make_tenant(sso_server)
    store = sso_server.store()
    try:
        created, _ = admin.create_operator(store, elsewhere.org_id, "linus@acme.test", "correct horse", "owner")
    finally:
        store.close()
    sso_server.wait_projected(created.position)
    landed = signed_in(sso_server, org, "linus")
    with sso_server.client() as client:
        headers = token(landed["sso-token"])
        assert client.get("/api/operators/sessions/current", headers=headers).json()["organizationId"] == str(org.org_id)
        me = client.get("/api/operators/me", headers=headers).json()
        assert me["_id"] == str(created.id) and me["role"] == "agent"


def test_a_disabled_operator_is_refused(sso_server, org):
    first = signed_in(sso_server, org, "grace")
    with sso_server.client() as client:
        grace = client.get("/api/operators/me", headers=token(first["sso-token"])).json()["_id"]
        disabled = client.patch(f"/api/operators/{grace}", json={"status": "disabled"}, headers=org.operator)
        assert disabled.status_code == 200, disabled.text
    assert "disabled" in signed_in(sso_server, org, "grace")["sso-error"]


def test_a_disabled_sso_or_unknown_organization_lands_with_an_error(sso_server, provider, org):
    with httpx.Client(timeout=30) as browser:
        unknown = landing(browser.get(f"{sso_server.base_url}/api/sso/{uuid.uuid4()}/start"))
    assert "not enabled" in unknown["sso-error"]
    other = make_tenant(sso_server)
    with sso_server.client() as client:
        assert client.put("/api/organization/sso", json=provider.settings(enabled=False, allowedDomains=[]),
                          headers=other.operator).status_code == 200
        assert client.get("/api/sso/discover", params={"organizationId": str(other.org_id)}).status_code == 404
        assert "not enabled" in landing(client.get(f"/api/sso/{other.org_id}/start"))["sso-error"]
