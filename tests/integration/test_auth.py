"""Authentication, scopes, organization isolation, pinned keys, API-Version and credentials in URLs,
tested with the attacker's requests."""

from __future__ import annotations

import base64
import uuid

import pytest

from tests.support.servers import basic, make_server, make_tenant, token
from tests.support.mcp_helpers import PASSWORD, Flow, hidden_fields, pkce
from tests.integration.test_resources import create_conversation, create_customer, post_message


@pytest.fixture
def seeded(http, tenant):
    customer = create_customer(http, tenant, email="iso@example.com")
    conversation = create_conversation(http, tenant, customer["_id"])
    message = post_message(http, tenant, conversation["_id"], "private words")
    return {"customer": customer, "conversation": conversation, "message": message}


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Token pt_forged"},
    {"Authorization": "Basic " + base64.b64encode(b"pk_forged").decode()},
    {"Authorization": "Basic !!!notbase64"},
    {"Authorization": "Bearer something"},
    {"Authorization": "Token"},
])
def test_missing_or_invalid_credentials_get_401(http, headers):
    response = http.get("/api/conversations", headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 401


@pytest.mark.parametrize("method, path, scope", [
    ("GET", "/api/conversations", "conversations:read"),
    ("GET", "/api/customers", "customers:read"),
    ("POST", "/api/customers", "customers:write"),
    ("GET", "/api/messages", "messages:read"),
    ("POST", "/api/messages", "messages:write"),
    ("GET", "/api/websites", "websites:read"),
])
def test_key_without_the_scope_gets_403(http, tenant, method, path, scope):
    everything_else = ",".join(s for s in (
        "conversations:read,customers:read,customers:write,documents:read,messages:read,messages:write,websites:read"
    ).split(",") if s != scope)
    response = http.request(method, path, headers=tenant.key(everything_else), json={})
    assert response.status_code == 403
    assert scope in response.json()["detail"]


def test_other_organization_records_are_404_and_never_listed(http, tenant, other_tenant, seeded):
    for headers in (other_tenant.operator, other_tenant.key()):
        assert http.get(f"/api/customers/{seeded['customer']['_id']}", headers=headers).status_code == 404
        assert http.get(f"/api/conversations/{seeded['conversation']['_id']}", headers=headers).status_code == 404
        assert http.get(f"/api/messages/{seeded['message']['_id']}", headers=headers).status_code == 404
        assert http.get(f"/api/websites/{tenant.website_name}", headers=headers).status_code == 404
        for path in ("/api/customers", "/api/conversations", "/api/messages", "/api/websites"):
            listed = http.get(path, headers=headers).json()
            assert all(item["_id"] not in {seeded["customer"]["_id"], seeded["conversation"]["_id"],
                                           seeded["message"]["_id"], str(tenant.website_id)} for item in listed)
        filtered = http.get("/api/conversations", params={"websiteId": str(tenant.website_id)}, headers=headers)
        assert filtered.json() == []


def test_other_organization_cannot_write_into_it(http, tenant, other_tenant, seeded):
    hijack = http.post("/api/messages", json={"conversationId": seeded["conversation"]["_id"], "content": "x",
                                              "from": "operator"}, headers=other_tenant.operator)
    assert hijack.status_code == 404
    edit = http.put(f"/api/customers/{seeded['customer']['_id']}", json={"nickname": "pwned"},
                    headers=other_tenant.operator)
    assert edit.status_code == 404
    read = http.post(f"/api/messages/{seeded['message']['_id']}/read", headers=other_tenant.operator)
    assert read.status_code == 404
    assert http.get(f"/api/customers/{seeded['customer']['_id']}", headers=tenant.operator).json()["nickname"] is None


def test_pinned_key_sees_only_its_website(http, tenant, seeded):
    other_website, _ = tenant.add_website()
    pinned = tenant.key("messages:read,conversations:read,customers:read,websites:read", website=other_website)
    assert http.get(f"/api/messages/{seeded['message']['_id']}", headers=pinned).status_code == 404
    assert http.get("/api/messages", headers=pinned).json() == []
    assert http.get("/api/conversations", headers=pinned).json() == []
    assert http.get(f"/api/conversations/{seeded['conversation']['_id']}", headers=pinned).status_code == 404
    assert [w["_id"] for w in http.get("/api/websites", headers=pinned).json()] == [str(other_website)]
    same_site = tenant.key("messages:read", website=tenant.website_id)
    assert http.get(f"/api/messages/{seeded['message']['_id']}", headers=same_site).status_code == 200


def test_revoked_key_gets_401(http, tenant, server):
    from commands import admin

    store = server.store()
    try:
        created, secret = admin.create_api_key(store, tenant.org_id, ["websites:read"], None, None)
        server.wait_projected(created.position)
        assert http.get("/api/websites", headers=basic(secret)).status_code == 200
        revoked = admin.revoke_api_key(store, created.id)
    finally:
        store.close()
    server.wait_projected(revoked.position)
    assert http.get("/api/websites", headers=basic(secret)).status_code == 401


def revoke_key(server, key_id: uuid.UUID) -> None:
    from commands import admin

    store = server.store()
    try:
        revoked = admin.revoke_api_key(store, key_id)
    finally:
        store.close()
    server.wait_projected(revoked.position)


def test_a_key_revoked_after_it_posted_gets_401_for_every_post_and_stores_nothing(http, tenant, server, seeded):
    """The API keeps the credentials it looked up, so a message post needs no lookup of its own. A key
    revoked since must still get 401 before any other answer (404, 400, 403), and write nothing."""
    conversation_id = seeded["conversation"]["_id"]
    key_id, writer = tenant.new_key("messages:write")
    post_message(http, tenant, conversation_id, "while valid", headers=writer)  # the API keeps the key now
    reader_id, reader = tenant.new_key("messages:read")
    assert http.get("/api/messages", params={"conversationId": conversation_id}, headers=reader).status_code == 200
    revoke_key(server, key_id)
    revoke_key(server, reader_id)

    attempts = [
        (writer, {"conversationId": conversation_id, "content": "after revocation", "from": "customer"}),
        (writer, {"conversationId": str(uuid.uuid4()), "content": "nowhere", "from": "customer"}),  # else 404
        (writer, {"conversationId": conversation_id, "from": "customer"}),  # else 400
        (writer, {"conversationId": conversation_id, "content": "note", "from": "operator", "internal": True}),  # 403
        (reader, {"conversationId": conversation_id, "content": "no scope", "from": "customer"}),  # else 403
    ]
    found_revoked = []
    for headers, body in attempts:
        response = http.post("/api/messages", json=body, headers=headers)
        assert response.status_code == 401, (body, response.text)
        if headers in found_revoked:  # no longer kept: counted as a request without a valid credential
            assert response.headers["RateLimit-Policy"].startswith('"anonymous"'), response.headers
        found_revoked.append(headers)
    transcript = http.get("/api/messages", params={"conversationId": conversation_id}, headers=tenant.operator)
    assert [m["content"] for m in transcript.json()] == ["private words", "while valid"]


def test_another_credentials_revocation_does_not_lock_a_valid_key_out(http, tenant, server, seeded):
    conversation_id = seeded["conversation"]["_id"]
    _, writer = tenant.new_key("messages:write")
    post_message(http, tenant, conversation_id, "first", headers=writer)
    other_id, _ = tenant.new_key("messages:write")
    revoke_key(server, other_id)
    post_message(http, tenant, conversation_id, "after another key's revocation", headers=writer)
    transcript = http.get("/api/messages", params={"conversationId": conversation_id}, headers=tenant.operator)
    assert [m["content"] for m in transcript.json()][-2:] == ["first", "after another key's revocation"]


def test_operator_sign_in_and_sign_out(http, tenant):
    wrong = http.post("/api/operators/sessions", json={"email": tenant.operator_email, "password": "nope"})
    assert wrong.status_code == 401
    unknown = http.post("/api/operators/sessions", json={"email": "ghost@example.com", "password": "correct horse"})
    assert unknown.status_code == 401
    signed_in = http.post("/api/operators/sessions", json={"email": tenant.operator_email, "password": "correct horse"})
    assert signed_in.status_code == 200
    session = token(signed_in.json()["token"])
    assert http.get("/api/websites", headers=session).status_code == 200
    conversation = create_conversation(http, tenant, create_customer(http, tenant)["_id"], headers=session)
    post_message(http, tenant, conversation["_id"], "signed in", headers=session)  # the API keeps the token
    assert http.delete("/api/operators/sessions/current", headers=session).status_code == 200
    assert http.get("/api/websites", headers=session).status_code == 401
    assert http.post("/api/messages", headers=session, json={
        "conversationId": conversation["_id"], "content": "signed out", "from": "operator"}).status_code == 401
    assert http.get("/api/websites", headers=tenant.operator).status_code == 200


@pytest.fixture(scope="module")
def guarded(infra, tmp_path_factory):
    """A server with the default backoff (the suite's own server lifts it, as it lifts the rate limits)."""
    server = make_server(infra, tmp_path_factory.mktemp("guarded"), PARLEY_SIGNIN_FAILURES_PER_ACCOUNT="5").start()
    yield server
    server.stop()


def test_guessing_one_accounts_password_holds_that_account_back_only(guarded):
    victim, other = make_tenant(guarded), make_tenant(guarded)
    with guarded.client() as http:
        def attempt(email: str, password: str):
            return http.post("/api/operators/sessions", json={"email": email, "password": password})

        assert [attempt(victim.operator_email, f"guess {n}").status_code for n in range(5)] == [401] * 5
        refused = attempt(victim.operator_email, "guess 5")
        assert refused.status_code == 429 and refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["field"] == "email" and "failed sign-ins" in refused.json()["detail"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 15 * 60
        # held back whatever the password and however the address is written: the guesser learns nothing
        assert attempt(victim.operator_email, PASSWORD).status_code == 429
        assert attempt(f" {victim.operator_email.upper()}", PASSWORD).status_code == 429
        assert attempt(other.operator_email, PASSWORD).status_code == 200
        # an address no operator has is held back alike, so a refusal does not tell the two apart
        ghost = f"ghost-{uuid.uuid4().hex[:8]}@example.com"
        assert [attempt(ghost, PASSWORD).status_code for _ in range(6)] == [401] * 5 + [429]
        # a successful sign-in clears the count
        assert [attempt(other.operator_email, "wrong").status_code for _ in range(4)] == [401] * 4
        assert attempt(other.operator_email, PASSWORD).status_code == 200
        assert [attempt(other.operator_email, "wrong").status_code for _ in range(5)] == [401] * 5

        # the MCP consent page's sign-in counts the same failures
        flow = Flow(http, guarded.base_url)
        flow.register()
        page = http.get(http.get(flow.authorize_url(pkce()[1])).headers["location"])
        held = http.post("/oauth/consent", data={**hidden_fields(page.text), "email": victim.operator_email,
                                                 "password": PASSWORD})
        assert held.status_code == 429 and "failed sign-ins" in held.text
        assert 1 <= int(held.headers["Retry-After"]) <= 15 * 60
def test_a_refused_sign_in_names_no_basic_challenge(http, tenant):
    """A Basic challenge makes a browser ask for a user name and password in a dialog of its own, over the
    dashboard's sign-in page (which says what went wrong itself)."""
    for email, password in ((tenant.operator_email, "nope"), ("ghost@example.com", "correct horse")):
        refused = http.post("/api/operators/sessions", json={"email": email, "password": password})
        assert refused.status_code == 401
        assert refused.headers["content-type"] == "application/problem+json"
        challenge = refused.headers["www-authenticate"]
        assert challenge and "basic" not in challenge.lower(), challenge


def test_sign_out_refuses_api_keys(http, tenant):
    assert http.delete("/api/operators/sessions/current", headers=tenant.key()).status_code == 403


@pytest.mark.parametrize("version, status", [(None, 200), ("1", 200), ("2", 400), ("0", 400), ("abc", 400)])
def test_api_version(http, tenant, version, status):
    headers = {**tenant.operator, **({"API-Version": version} if version else {})}
    response = http.get("/api/websites", headers=headers)
    assert response.status_code == status
    assert response.headers["API-Version"] == "1"


def test_every_response_carries_api_version(http, tenant):
    for response in (http.get("/api/websites"), http.get("/api/nowhere", headers=tenant.operator),
                     http.get(f"/api/messages/{uuid.uuid4()}", headers=tenant.operator),
                     http.post("/api/messages", content=b"[", headers=tenant.operator)):
        assert response.headers["API-Version"] == "1"
        assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("parameter", ["api_key", "apikey", "key", "token", "access_token", "secret", "Token"])
def test_credentials_in_the_url_are_refused(http, tenant, parameter):
    response = http.get("/api/websites", params={parameter: tenant.operator_token}, headers=tenant.operator)
    assert response.status_code == 400
    assert response.json()["field"] == parameter.lower()


def test_no_secret_reaches_the_server_log(tenant, server, http):
    http.get("/api/websites", params={"token": tenant.operator_token})
    http.get("/api/websites", headers={"Authorization": "Token pt_wrong_secret_value"})
    log = "".join(server.output)
    assert tenant.operator_token not in log and "pt_wrong_secret_value" not in log


def test_secrets_are_stored_hashed(server, tenant):
    import psycopg

    with psycopg.connect(server.database_url) as conn:
        dump = str(conn.execute("SELECT state FROM parley_events").fetchall()) + str(
            conn.execute("SELECT * FROM rm_operator_tokens").fetchall())
    assert tenant.operator_token not in dump
    assert "correct horse" not in dump


def test_posting_into_a_conversation_the_credential_may_not_see_is_404_and_stores_nothing(
        http, tenant, other_tenant, seeded):
    from tests.support.visitors import start_session, visitor_with_conversation

    conversation_id = seeded["conversation"]["_id"]
    other_website, _ = tenant.add_website()
    attempts = [
        ("/api/messages", other_tenant.operator, {"from": "operator"}),  # another organization
        ("/api/messages", tenant.key("messages:write", website=other_website), {"from": "customer"}),  # pinned elsewhere
        ("/api/chat/messages", start_session(http, tenant.website_id).headers, {}),  # another visitor
    ]
    for path, headers, extra in attempts:
        response = http.post(path, headers=headers,
                             json={"conversationId": conversation_id, "content": "intruder", **extra})
        assert response.status_code == 404, (path, response.text)
        assert response.json()["detail"] == "conversation not found"
    visitor, _ = visitor_with_conversation(http, tenant)
    operator_only = http.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "customerId": str(visitor.customer_id), "operatorOnly": True}).json()
    refused = http.post("/api/chat/messages", headers=visitor.headers,
                        json={"conversationId": operator_only["_id"], "content": "let me in"})
    assert refused.status_code == 404
    transcript = http.get("/api/messages", params={"conversationId": conversation_id}, headers=tenant.operator)
    assert [m["content"] for m in transcript.json()] == ["private words"]
    assert http.get("/api/messages", params={"conversationId": operator_only["_id"]},
                    headers=tenant.operator).json() == []
