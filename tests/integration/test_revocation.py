"""What a revocation ends, tested with the attacker's requests: an operator removed from an organization
keeps no REST access to it."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from commands import admin
from tests.support.mcp_helpers import PASSWORD, browser, hidden_fields
from tests.support.servers import make_tenant, token


def run_admin(server, command, *args):
    store = server.store()
    try:
        done = command(store, *args)
    finally:
        store.close()
    server.wait_projected(done.position)
    return done


def login_code(http: httpx.Client, base: str, email: str, org_id) -> dict[str, str]:
    """What `parley login` does, by hand: a person allows the request for `org_id` on the consent page; the
    answer is the form that exchanges the code for an operator token."""
    client = http.post("/oauth/register", json={
        "client_name": "Parley CLI", "redirect_uris": ["http://127.0.0.1/callback"],
        "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]}).json()
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    redirect = "http://127.0.0.1:9/callback"
    address = f"{base}/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect, "state": "s",
        "code_challenge": challenge, "code_challenge_method": "S256", "resource": f"{base}/api"})
    with browser(base) as person:
        sign_in = person.get(person.get(address).headers["location"])
        choose = person.post("/oauth/consent", data={**hidden_fields(sign_in.text), "email": email,
                                                     "password": PASSWORD})
        done = person.post("/oauth/consent", data={**hidden_fields(choose.text), "org": str(org_id),
                                                   "decision": "allow"})
    assert done.status_code == 303, done.text
    code = parse_qs(urlsplit(done.headers["location"]).query)["code"][0]
    return {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
            "client_id": client["client_id"], "code_verifier": verifier, "resource": f"{base}/api"}


def logged_in_to(http: httpx.Client, base: str, email: str, org_id) -> dict[str, str]:
    exchanged = http.post("/oauth/token", data=login_code(http, base, email, org_id))
    assert exchanged.status_code == 200, exchanged.text
    return token(exchanged.json()["access_token"])


def joined(server, tenant):
    """Another organization, which the tenant's operator joined (`parley admin operator add-org`)."""
    other = make_tenant(server)
    run_admin(server, admin.add_operator_org, tenant.operator_email, other.org_id)
    return other


def attempts(http: httpx.Client, headers: dict[str, str], org) -> dict[str, int]:
    """Reading and writing in the organization, and creating an API key there: the status of each."""
    return {
        "read": http.get("/api/websites", headers=headers).status_code,
        "write": http.post("/api/customers", headers=headers, json={"websiteId": str(org.website_id)}).status_code,
        "api key": http.post("/api/apikeys", headers=headers, json={"scopes": ["websites:read"]}).status_code,
    }


def test_an_operator_removed_from_an_organization_keeps_no_rest_access_to_it(server, http, tenant):
    other = joined(server, tenant)
    there = logged_in_to(http, server.base_url, tenant.operator_email, other.org_id)
    websites = http.get("/api/websites", headers=there)
    assert [w["_id"] for w in websites.json()] == [str(other.website_id)]

    run_admin(server, admin.remove_operator_org, tenant.operator_email, other.org_id)
    assert attempts(http, there, other) == {"read": 401, "write": 401, "api key": 401}
    assert http.get("/api/websites", headers=tenant.operator).status_code == 200  # the own organization stays

    # joining again gives the old token nothing back
    run_admin(server, admin.add_operator_org, tenant.operator_email, other.org_id)
    assert http.get("/api/websites", headers=there).status_code == 401


def test_a_login_allowed_before_the_removal_opens_nothing_after_it(server, http, tenant):
    """The code was granted while the operator belonged to the organization and exchanged after the
    membership ended: whatever token it gives, it opens nothing there."""
    other = joined(server, tenant)
    form = login_code(http, server.base_url, tenant.operator_email, other.org_id)
    run_admin(server, admin.remove_operator_org, tenant.operator_email, other.org_id)
    exchanged = http.post("/oauth/token", data=form)
    if exchanged.status_code == 200:
        assert attempts(http, token(exchanged.json()["access_token"]), other) == {
            "read": 401, "write": 401, "api key": 401}

