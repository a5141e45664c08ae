"""The workspace endpoints the dashboard runs on: API keys, websites (create, settings, identity secret) and
the organization's operators, over HTTP against a real server."""

from __future__ import annotations

import uuid

import pytest

from commands.deciders.chat_session import identity_signature
from tests.support.servers import basic

PROBLEM = "application/problem+json"


def problem(response, status: int, field: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    if field is not None:
        assert body["field"] == field, body
    return body


def keys(http, tenant) -> list[dict]:
    response = http.get("/api/apikeys", headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def websites(http, tenant) -> list[dict]:
    return http.get("/api/websites", headers=tenant.operator).json()


# --- API keys -------------------------------------------------------------------------------------------------

def test_a_key_created_over_http_works_once_shown_and_stops_when_revoked(http, tenant):
    created = http.post("/api/apikeys", headers=tenant.operator, json={
        "name": "Zapier", "scopes": ["websites:read", "messages:read"], "ratePerMinute": 120})
    assert created.status_code == 200, created.text
    key = created.json()
    assert key["secret"].startswith("pk_") and key["name"] == "Zapier" and key["ratePerMinute"] == 120
    assert key["scopes"] == ["messages:read", "websites:read"] and key["revoked"] is False and key["websiteId"] is None

    listed = keys(http, tenant)
    assert [k["_id"] for k in listed] == [key["_id"]]
    assert "secret" not in listed[0] and key["secret"] not in http.get("/api/apikeys", headers=tenant.operator).text

    headers = basic(key["secret"])
    assert http.get("/api/websites", headers=headers).status_code == 200
    assert http.get("/api/customers", headers=headers).status_code == 403  # a scope it was not given

    revoked = http.delete(f"/api/apikeys/{key['_id']}", headers=tenant.operator)
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    problem(http.get("/api/websites", headers=headers), 401)
    assert keys(http, tenant)[0]["revoked"] is True
    again = http.delete(f"/api/apikeys/{key['_id']}", headers=tenant.operator)
    assert again.status_code == 200 and again.json()["revoked"] is True


def test_a_key_pinned_to_a_website_reads_only_that_website(http, tenant):
    other_website, _ = tenant.add_website()
    created = http.post("/api/apikeys", headers=tenant.operator,
                        json={"scopes": ["websites:read"], "websiteId": str(other_website)}).json()
    assert created["websiteId"] == str(other_website)
    seen = http.get("/api/websites", headers=basic(created["secret"])).json()
    assert [w["_id"] for w in seen] == [str(other_website)]


@pytest.mark.parametrize("body, field", [
    ({"scopes": ["root:all"]}, "scopes"),
    ({"scopes": []}, "scopes"),
    ({"scopes": "websites:read"}, "scopes"),
    ({"scopes": ["websites:read"], "ratePerMinute": 0}, "ratePerMinute"),
    ({"scopes": ["websites:read"], "websiteId": "not-an-id"}, "websiteId"),
    ({"scopes": ["websites:read"], "secret": "pk_chosen"}, "secret"),
    ({"scopes": ["websites:read"], "name": "x" * 101}, "name"),
])
def test_a_bad_key_request_answers_400_and_creates_nothing(http, tenant, body, field):
    problem(http.post("/api/apikeys", headers=tenant.operator, json=body), 400, field)
    assert keys(http, tenant) == []


def test_keys_are_for_operators_and_stay_in_their_organization(http, tenant, other_tenant):
    key_id, key_headers = tenant.new_key()
    problem(http.get("/api/apikeys"), 401)
    problem(http.get("/api/apikeys", headers={"Authorization": "Token pt_forged"}), 401)
    problem(http.get("/api/apikeys", headers=key_headers), 403)
    problem(http.post("/api/apikeys", headers=key_headers, json={"scopes": ["websites:read"]}), 403)
    problem(http.delete(f"/api/apikeys/{key_id}", headers=key_headers), 403)

    assert keys(http, other_tenant) == []
    problem(http.delete(f"/api/apikeys/{key_id}", headers=other_tenant.operator), 404)
    problem(http.delete("/api/apikeys/not-an-id", headers=other_tenant.operator), 404)
    assert http.get("/api/websites", headers=key_headers).status_code == 200  # still valid
    problem(http.post("/api/apikeys", headers=other_tenant.operator,
                      json={"scopes": ["websites:read"], "websiteId": str(tenant.website_id)}), 404)
    assert keys(http, other_tenant) == []


# --- Websites -------------------------------------------------------------------------------------------------

def test_a_website_created_over_http_shows_its_identity_secret_once(http, tenant):
    name = f"new-{uuid.uuid4().hex[:8]}"
    created = http.post("/api/websites", headers=tenant.operator, json={"websiteName": name, "brandColor": "#aa0011"})
    assert created.status_code == 200, created.text
    website = created.json()
    assert (website["websiteName"], website["brandColor"], website["allowedOrigins"]) == (name, "#aa0011", [])
    assert len(website["identitySecret"]) == 64
    read = http.get(f"/api/websites/{name}", headers=tenant.operator)
    assert read.status_code == 200 and "identitySecret" not in read.json()
    assert website["identitySecret"] not in http.get("/api/websites", headers=tenant.operator).text

    session = http.post("/api/chat/sessions", json={
        "websiteId": website["_id"], "userId": "u-1",
        "signature": identity_signature(website["identitySecret"], "u-1")})
    assert session.status_code == 200, session.text


@pytest.mark.parametrize("body, field, status", [
    ({"websiteName": "Not Valid"}, "websiteName", 400),
    ({"websiteName": "ok-name", "brandColor": "red"}, "brandColor", 400),
    ({"websiteName": "ok-name", "identitySecret": "mine"}, "identitySecret", 400),
    ({}, "websiteName", 400),
])
def test_a_bad_website_request_answers_400_and_creates_nothing(http, tenant, body, field, status):
    before = websites(http, tenant)
    problem(http.post("/api/websites", headers=tenant.operator, json=body), status, field)
    assert websites(http, tenant) == before


def test_a_taken_website_name_is_a_conflict(http, tenant, other_tenant):
    problem(http.post("/api/websites", headers=other_tenant.operator, json={"websiteName": tenant.website_name}),
            409, "websiteName")
    assert [w["websiteName"] for w in websites(http, other_tenant)] == [other_tenant.website_name]


def test_website_settings_change_only_what_is_named(http, tenant):
    url = f"/api/websites/{tenant.website_name}"
    origins = http.put(url, headers=tenant.operator, json={
        "allowedOrigins": ["https://Shop.Example.com", "https://shop.example.com:443/", "http://localhost:8080"]})
    assert origins.status_code == 200, origins.text
    assert origins.json()["allowedOrigins"] == ["https://shop.example.com", "http://localhost:8080"]
    assert origins.json()["brandColor"] == "#123456"

    color = http.put(url, headers=tenant.operator, json={"brandColor": "#00ff00"}).json()
    assert (color["brandColor"], color["allowedOrigins"]) == ("#00ff00", ["https://shop.example.com",
                                                                          "http://localhost:8080"])
    cleared = http.put(url, headers=tenant.operator, json={"brandColor": None, "allowedOrigins": []}).json()
    assert (cleared["brandColor"], cleared["allowedOrigins"]) == (None, [])
    unchanged = http.put(url, headers=tenant.operator, json={})
    assert unchanged.status_code == 200 and unchanged.json() == cleared


@pytest.mark.parametrize("body, field", [
    ({"brandColor": "blue"}, "brandColor"),
    ({"allowedOrigins": ["https://shop.example.com/path"]}, "allowedOrigins"),
    ({"allowedOrigins": ["javascript:alert(1)"]}, "allowedOrigins"),
    ({"allowedOrigins": ["https://user@shop.example.com"]}, "allowedOrigins"),
    ({"allowedOrigins": ["*"]}, "allowedOrigins"),
    ({"allowedOrigins": ["https://a.example"] * 51}, "allowedOrigins"),
    ({"websiteName": "renamed"}, "websiteName"),
    ({"brandColor": "#abcdef", "allowedOrigins": ["https://ok.example", "ftp://no.example"]}, "allowedOrigins"),
])
def test_bad_website_settings_answer_400_and_change_nothing(http, tenant, body, field):
    url = f"/api/websites/{tenant.website_name}"
    before = http.get(url, headers=tenant.operator).json()
    problem(http.put(url, headers=tenant.operator, json=body), 400, field)
    assert http.get(url, headers=tenant.operator).json() == before


def test_website_writes_are_for_operators_of_the_organization(http, tenant, other_tenant):
    url = f"/api/websites/{tenant.website_name}"
    key = tenant.key()
    problem(http.post("/api/websites", json={"websiteName": "no-credential"}), 401)
    problem(http.post("/api/websites", headers=key, json={"websiteName": "by-a-key"}), 403)
    problem(http.put(url, headers=key, json={"brandColor": "#000000"}), 403)
    problem(http.post(f"{url}/identity-secret", headers=key), 403)
    problem(http.put(url, headers=other_tenant.operator, json={"brandColor": "#000000"}), 404)
    problem(http.post(f"{url}/identity-secret", headers=other_tenant.operator), 404)
    problem(http.put("/api/websites/no-such-site", headers=tenant.operator, json={}), 404)
    assert http.get(url, headers=tenant.operator).json()["brandColor"] == "#123456"
    signed = {"websiteId": str(tenant.website_id), "userId": "u-7",
              "signature": identity_signature(tenant.identity_secret, "u-7")}
    assert http.post("/api/chat/sessions", json=signed).status_code == 200  # the secret did not change


def test_rotating_the_identity_secret_retires_the_former_one(http, tenant):
    rotated = http.post(f"/api/websites/{tenant.website_name}/identity-secret", headers=tenant.operator)
    assert rotated.status_code == 200, rotated.text
    secret = rotated.json()["identitySecret"]
    assert secret != tenant.identity_secret and len(secret) == 64
    assert "identitySecret" not in http.get(f"/api/websites/{tenant.website_name}", headers=tenant.operator).json()

    def session(identity_secret: str):
        return http.post("/api/chat/sessions", json={"websiteId": str(tenant.website_id), "userId": "u-9",
                                                     "signature": identity_signature(identity_secret, "u-9")})
    problem(session(tenant.identity_secret), 401, "signature")
    assert session(secret).status_code == 200


# --- Operators ------------------------------------------------------------------------------------------------

def test_operators_lists_the_organization_s_operators_only(http, tenant, other_tenant):
    listed = http.get("/api/operators", headers=tenant.operator)
    assert listed.status_code == 200
    assert [o["email"] for o in listed.json()] == [tenant.operator_email]
    assert set(listed.json()[0]) == {"_id", "email", "displayName", "role", "status", "availability", "createdAt"}
    me = http.get("/api/operators/me", headers=other_tenant.operator).json()
    assert (me["email"], me["role"]) == (other_tenant.operator_email, "owner")
    problem(http.get("/api/operators", headers=tenant.key()), 403)
    problem(http.get("/api/operators"), 401)
