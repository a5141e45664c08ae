"""The attacker's requests against the MCP server's OAuth: forged and misdirected tokens, PKCE downgrades,
replayed codes, foreign redirect URIs, forged consent forms, a read token calling a write tool, and one
organization's connection reaching for another's conversation."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import jwt
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
import psycopg
import pytest
from cryptography.hazmat.primitives import serialization

from commands.admin import hash_secret
from mcp_server.cli_tokens import API_TOKEN_SECONDS
from mcp_server.oauth import PENDING_PER_CLIENT as PENDING
from tests.support.mcp_helpers import PASSWORD, REDIRECT, Flow, browser, complete_consent, hidden_fields, pkce, rpc
from tests.integration.test_mcp import _admin, seed_conversation


@pytest.fixture
def flow(server, http) -> Flow:
    registered = Flow(http, server.base_url)
    registered.register()
    return registered


def _signing_key(server):
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        kid, pem = conn.execute("SELECT kid, private_pem FROM parley_oauth_keys WHERE retired_at IS NULL").fetchone()
    return kid, serialization.load_pem_private_key(bytes(pem), None)


def _forged(server, claims: dict, **changes) -> str:
    kid, key = _signing_key(server)
    return jwt.encode({**claims, **changes}, key, algorithm="ES256", headers={"kid": kid})


def _list_tools(http, token: str) -> int:
    return rpc(http, token, "tools/list").status_code


def test_tokens_that_do_not_check_out_are_refused(server, http, flow, tenant, other_tenant):
    access = flow.tokens(tenant.operator_email)["access_token"]
    assert _list_tools(http, access) == 200
    claims = jwt.decode(access, options={"verify_signature": False})
    now = int(time.time())
    refused = {
        "another audience": _forged(server, claims, aud="https://elsewhere.example/mcp"),
        "another product": _forged(server, claims, product="other"),
        "no product": _forged(server, {k: v for k, v in claims.items() if k != "product"}),
        "expired": _forged(server, claims, iat=now - 7200, exp=now - 3600),
        "another issuer": _forged(server, claims, iss="https://issuer.example"),
        "an organization the operator is not in": _forged(server, claims, org=str(other_tenant.org_id)),
        "another operator": _forged(server, claims, sub=str(other_tenant.org_id)),
        "a tampered signature": access[:-4] + ("AAAA" if not access.endswith("AAAA") else "BBBB"),
        "a tampered payload": _swap_payload(access, {**claims, "scope": "parley:read parley:write", "org": "x"}),
        "no signature": jwt.encode(claims, key=None, algorithm="none"),
        "an HMAC signature keyed by the public key": _hmac_confusion(server, claims),
    }
    for why, token in refused.items():
        response = rpc(http, token, "tools/list")
        assert response.status_code == 401, why
        assert 'error="invalid_token"' in response.headers["www-authenticate"], why
    assert _list_tools(http, access) == 200  # the genuine one still works


def _swap_payload(token: str, claims: dict) -> str:
    header, _, signature = token.split(".")
    forged = jwt.encode(claims, "k" * 32, algorithm="HS256").split(".")[1]
    return f"{header}.{forged}.{signature}"


def _hmac_confusion(server, claims: dict) -> str:
    kid, key = _signing_key(server)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    import hashlib
    import hmac
    import base64
    import json

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")
    signing_input = b64(json.dumps({"alg": "HS256", "kid": kid, "typ": "JWT"}).encode()) + "." + \
        b64(json.dumps(claims).encode())
    return signing_input + "." + b64(hmac.new(public, signing_input.encode(), hashlib.sha256).digest())


def test_pkce_is_s256_only_and_the_verifier_must_match(server, http, flow, tenant):
    verifier, challenge = pkce()
    for method, challenge_sent in (("plain", verifier), (None, None), ("S256", None)):
        response = http.get(flow.authorize_url(challenge_sent, method=method))
        assert response.status_code == 302, response.text
        answer = parse_qs(urlsplit(response.headers["location"]).query)
        assert answer["error"] == ["invalid_request"] and response.headers["location"].startswith(REDIRECT)
    wrong = flow.exchange(flow.code(tenant.operator_email, challenge), pkce()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"


def test_a_code_is_used_once_and_its_replay_ends_the_connection(server, http, flow, tenant):
    verifier, challenge = pkce()
    code = flow.code(tenant.operator_email, challenge)
    first = flow.exchange(code, verifier)
    assert first.status_code == 200
    assert _list_tools(http, first.json()["access_token"]) == 200
    replay = flow.exchange(code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert _list_tools(http, first.json()["access_token"]) == 401  # the code leaked: what it gave is revoked


def test_another_clients_code_and_secret_do_not_work(server, http, flow, tenant):
    verifier, challenge = pkce()
    code = flow.code(tenant.operator_email, challenge)
    thief = Flow(http, server.base_url)
    thief.register()
    assert thief.exchange(code, verifier).json()["error"] == "invalid_grant"
    wrong_secret = http.post("/oauth/token", data={"client_id": flow.client_id, "client_secret": "f" * 64,
                                                   "grant_type": "authorization_code", "code": code,
                                                   "code_verifier": verifier, "redirect_uri": REDIRECT})
    assert wrong_secret.status_code == 401 and wrong_secret.json()["error"] == "invalid_client"
    assert flow.exchange(code, verifier).status_code == 200  # neither attempt spent the code


def test_redirect_uris_match_exactly_but_loopback_on_any_port(server, http, flow, tenant):
    verifier, challenge = pkce()
    for foreign in ("https://attacker.example/callback", "http://127.0.0.1:33418/other",
                    "http://127.0.0.1.attacker.example:33418/callback", "http://localhost:33418/callback"):
        response = http.get(flow.authorize_url(challenge, redirect_uri=foreign))
        assert response.status_code == 400, foreign  # shown to the person, never redirected to the foreign URI
        assert response.json()["error"] == "invalid_request"
    other_port = "http://127.0.0.1:51234/callback"
    code = flow.code(tenant.operator_email, challenge, redirect_uri=other_port)
    assert flow.exchange(code, verifier, redirect_uri=REDIRECT).status_code == 400  # the token request must match
    code = flow.code(tenant.operator_email, challenge, redirect_uri=other_port)
    assert flow.exchange(code, verifier, redirect_uri=other_port).status_code == 200
    bad = http.post("/oauth/register", json={"redirect_uris": ["http://example.com/callback"], "client_name": "x"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_redirect_uri"


def test_the_resource_is_required_and_bound_into_the_token(server, http, flow, tenant):
    _, challenge = pkce()
    for resource in (None, "https://elsewhere.example/mcp"):
        response = http.get(flow.authorize_url(challenge, resource=resource))
        answer = parse_qs(urlsplit(response.headers["location"]).query)
        assert answer["error"] == ["invalid_target"] and answer["state"] == ["st-123"]
        assert answer["iss"] == [server.base_url]
    access = flow.tokens(tenant.operator_email)["access_token"]
    claims = jwt.decode(access, options={"verify_signature": False})
    assert claims["aud"] == server.base_url + "/mcp" and claims["product"] == "parley"
    assert claims["iss"] == server.base_url and claims["org"] == str(tenant.org_id)
    assert claims["exp"] - claims["iat"] == 3600 and claims["jti"] and claims["scope"] == "parley:read parley:write"


def test_deny_answers_access_denied_with_state_and_issuer(server, http, flow, tenant):
    _, challenge = pkce()
    answer = complete_consent(server.base_url, flow.authorize_url(challenge), tenant.operator_email, PASSWORD,
                              decision="deny")
    assert answer == {"error": ["access_denied"], "error_description": ["the operator denied access"],
                      "state": ["st-123"], "iss": [server.base_url]}


def test_the_consent_form_refuses_forgeries_and_wrong_passwords(server, flow, tenant, other_tenant):
    _, challenge = pkce()
    with browser(server.base_url) as person, browser(server.base_url) as attacker:
        to_consent = person.get(flow.authorize_url(challenge))
        page = person.get(to_consent.headers["location"])
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert 'name="password"' in page.text and "correct horse" not in page.text
        fields = hidden_fields(page.text)
        wrong = person.post("/oauth/consent", data={**fields, "email": tenant.operator_email, "password": "wrong"})
        assert wrong.status_code == 401 and "wrong password" in wrong.text
        fields = hidden_fields(wrong.text)
        # a cross-site form post carries the fields it could copy, never the person's cookie
        forged = attacker.post("/oauth/consent", data={**fields, "email": tenant.operator_email, "password": PASSWORD})
        assert forged.status_code == 403
        signed_in = person.post("/oauth/consent", data={**fields, "email": tenant.operator_email, "password": PASSWORD})
        assert signed_in.status_code == 200
        choosing = hidden_fields(signed_in.text)
        stale = person.post("/oauth/consent", data={**fields, "org": str(tenant.org_id), "decision": "allow"})
        assert stale.status_code == 403  # the form of an earlier view is spent
        forged = attacker.post("/oauth/consent", data={**choosing, "org": str(tenant.org_id), "decision": "allow"})
        assert forged.status_code == 403
        # an organization the operator does not belong to cannot be chosen
        chosen = person.post("/oauth/consent", data={**choosing, "org": str(other_tenant.org_id), "decision": "allow"})
        assert chosen.status_code == 400 and "Choose one of your organizations" in chosen.text


def test_a_read_token_calling_a_write_tool_gets_insufficient_scope(server, http, flow, tenant):
    conversation_id = seed_conversation(http, tenant)
    access = flow.tokens(tenant.operator_email, scope="parley:read")["access_token"]
    for name, arguments in (("send_operator_reply", {"conversationId": conversation_id, "content": "hi",
                                                     "requestId": "r1"}),
                            ("set_conversation_resolved", {"conversationId": conversation_id, "resolved": True})):
        response = rpc(http, access, "tools/call", {"name": name, "arguments": arguments})
        assert response.status_code == 403
        challenge = response.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="parley:read parley:write"' in challenge
        assert response.json()["error"] == "insufficient_scope" and "parley:write" in response.json()["error_description"]
    listing = rpc(http, access, "tools/call", {"name": "list_websites", "arguments": {}})
    assert listing.status_code == 200
    messages = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id}).json()
    assert [m["from"] for m in messages] == ["customer"]  # nothing was sent


def test_a_deeply_nested_body_is_a_client_error(server, http, flow, tenant):
    access = flow.tokens(tenant.operator_email, scope="parley:read")["access_token"]
    nested = "[" * 100_000 + "]" * 100_000
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ' + nested + "}"
    response = http.post("/mcp", content=body, headers={
        "Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json", "MCP-Protocol-Version": "2025-06-18"})
    assert 400 <= response.status_code < 500, response.text


def test_one_organizations_connection_cannot_reach_anothers_conversation(server, http, flow, tenant, other_tenant):
    theirs = seed_conversation(http, other_tenant, "private question")
    access = flow.tokens(tenant.operator_email)["access_token"]
    for name, arguments in (
            ("send_operator_reply", {"conversationId": theirs, "content": "hello", "requestId": "x1"}),
            ("set_conversation_resolved", {"conversationId": theirs, "resolved": True}),
            ("get_website_summary", {"websiteId": str(other_tenant.website_id)}),
            ("list_conversations", {"websiteId": str(other_tenant.website_id)}),
            ("show_inbox", {"websiteId": str(other_tenant.website_id)})):
        result = rpc(http, access, "tools/call", {"name": name, "arguments": arguments}).json()["result"]
        assert result["isError"] is True, name
        assert result["content"][0]["text"] in (f"Error executing tool {name}: conversation not found",
                                                f"Error executing tool {name}: website not found"), name
    listing = http.get("/api/conversations", headers=other_tenant.operator,
                       params={"websiteId": str(other_tenant.website_id), "inboxFilter": "all"}).json()
    assert listing["conversations"][0]["resolved"] is False
    messages = http.get("/api/messages", headers=other_tenant.operator, params={"conversationId": theirs}).json()
    assert [m["content"] for m in messages] == ["private question"]


def test_concurrent_calls_with_one_request_id_send_once(server, http, flow, tenant):
    import concurrent.futures

    conversation_id = seed_conversation(http, tenant)
    access = flow.tokens(tenant.operator_email)["access_token"]
    arguments = {"conversationId": conversation_id, "content": "exactly once", "requestId": "same-id"}

    def call(_):
        return rpc(http, access, "tools/call", {"name": "send_operator_reply", "arguments": arguments}).json()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = [r["result"] for r in pool.map(call, range(4))]
    assert all(not r["isError"] for r in results), results
    assert [r["structuredContent"] for r in results] == [results[0]["structuredContent"]] * 4
    assert results[0]["structuredContent"]["sent"] is True
    messages = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id}).json()
    assert [m["content"] for m in messages if m["from"] == "operator"] == ["exactly once"]
    other = rpc(http, access, "tools/call", {"name": "send_operator_reply", "arguments": {
        **arguments, "conversationId": seed_conversation(http, tenant)}}).json()["result"]
    assert other["isError"] and "another conversation" in other["content"][0]["text"]


def test_a_tampered_or_foreign_cursor_is_refused(server, http, flow, tenant):
    access = flow.tokens(tenant.operator_email)["access_token"]
    website = str(tenant.website_id)
    for cursor in ("not-a-cursor", "eyJhIjoxfQ"):
        result = rpc(http, access, "tools/call", {"name": "list_conversations", "arguments": {
            "websiteId": website, "cursor": cursor}}).json()["result"]
        assert result["isError"] and "cursor" in result["content"][0]["text"]


def test_a_rotated_key_keeps_verifying_its_tokens_and_new_tokens_use_the_new_key(server, http, flow, tenant):
    before = flow.tokens(tenant.operator_email)["access_token"]
    old_kid = jwt.get_unverified_header(before)["kid"]
    new_kid = _admin(server, "oauth", "rotate-key")["kid"]
    assert new_kid != old_kid
    published = {key["kid"]: key for key in http.get("/.well-known/jwks.json").json()["keys"]}
    assert {old_kid, new_kid} <= set(published)
    assert _list_tools(http, before) == 200  # the retired key still verifies what it signed

    after = flow.tokens(tenant.operator_email)["access_token"]
    assert jwt.get_unverified_header(after)["kid"] == new_kid and _list_tools(http, after) == 200
    claims = jwt.decode(after, jwt.PyJWK(published[new_kid]).key, algorithms=["ES256"],
                        audience=server.base_url + "/mcp", issuer=server.base_url)
    assert claims["product"] == "parley" and claims["org"] == str(tenant.org_id)


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_every_protocol_revision_the_sdk_negotiates_is_accepted(server, http, flow, tenant, version):
    access = flow.tokens(tenant.operator_email, scope="parley:read")["access_token"]
    headers = {"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream"}
    initialized = http.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "old host", "version": "1"}}})
    assert initialized.status_code == 200, initialized.text
    assert initialized.json()["result"]["protocolVersion"] == version
    listed = http.post("/mcp", headers={**headers, "MCP-Protocol-Version": version},
                       json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 14, listed.text


def test_an_unknown_protocol_revision_is_refused(server, http, flow, tenant):
    access = flow.tokens(tenant.operator_email, scope="parley:read")["access_token"]
    refused = http.post("/mcp", headers={"Authorization": f"Bearer {access}", "MCP-Protocol-Version": "1999-01-01",
                                         "Accept": "application/json, text/event-stream"},
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert refused.status_code == 400 and "result" not in refused.json() and refused.json()["error"]["message"]


def test_a_public_client_revokes_without_a_secret_and_a_confidential_one_needs_its_own(server, http, tenant):
    """RFC 7009 as an MCP host sends it on sign-out: `token` and `client_id`, no `client_secret` field."""
    public = Flow(http, server.base_url)
    assert public.register(token_endpoint_auth_method="none").get("client_secret") is None
    tokens = public.tokens(tenant.operator_email)
    revoked = http.post("/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": public.client_id})
    assert revoked.status_code == 200, revoked.text
    refreshed = http.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                                "client_id": public.client_id})
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert _list_tools(http, tokens["access_token"]) == 401

    confidential = Flow(http, server.base_url)
    assert confidential.register()["client_secret"]
    kept = confidential.tokens(tenant.operator_email)
    unauthenticated = http.post("/oauth/revoke", data={"token": kept["refresh_token"],
                                                       "client_id": confidential.client_id})
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error"] == "unauthorized_client"
    assert _list_tools(http, kept["access_token"]) == 200
    assert http.post("/oauth/revoke", data={"token": kept["refresh_token"], "client_id": confidential.client_id,
                                            "client_secret": confidential.client_secret}).status_code == 200
    assert _list_tools(http, kept["access_token"]) == 401


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_stateless_mcp_answers_405_to_a_stream_or_session_request(server, http, flow, tenant, method):
    """No session and no server-initiated messages: a GET would hold a stream open that never carries
    anything, so it answers 405 naming POST, as the Streamable HTTP transport allows."""
    access = flow.tokens(tenant.operator_email, scope="parley:read")["access_token"]
    for headers in ({"Authorization": f"Bearer {access}"}, {}):
        refused = http.request(method, "/mcp", timeout=5, headers={
            **headers, "Accept": "text/event-stream", "MCP-Protocol-Version": "2025-06-18"})
        assert refused.status_code == 405 and refused.headers["Allow"] == "POST"
    assert _list_tools(http, access) == 200


def test_a_client_keeps_at_most_100_authorization_requests_waiting(server, http, flow, tenant):
    """Past the cap, each new authorization request drops the client's oldest waiting one: the table stays
    bounded per client, and the newest request still leads to a working consent page."""
    _, challenge = pkce()
    locations = [http.get(flow.authorize_url(challenge, state=f"s{i}")).headers["location"] for i in range(PENDING + 5)]
    with psycopg.connect(server.database_url) as conn:
        pending = conn.execute("SELECT count(*) FROM parley_oauth_requests WHERE client_id = %s",
                               (flow.client_id,)).fetchone()[0]
    assert pending == PENDING
    assert "expired" in http.get(locations[0]).text
    assert 'name="password"' in http.get(locations[-1]).text


def test_a_phishing_client_cannot_ask_for_an_operator_token(server, http, tenant):
    """Anyone may register a client named like the CLI with their own https redirect and send an operator
    its authorization link for `{base}/api`: refused before any consent page, so no code ever goes there."""
    phisher = Flow(http, server.base_url)
    phisher.register(["https://attacker.example/callback"], client_name="Parley CLI (official)",
                     token_endpoint_auth_method="none")
    _, challenge = pkce()
    refused = http.get(phisher.authorize_url(challenge, redirect_uri="https://attacker.example/callback",
                                             resource=server.base_url + "/api"))
    assert refused.status_code == 302
    location = urlsplit(refused.headers["location"])
    assert location.hostname == "attacker.example" and "code" not in parse_qs(location.query)
    assert parse_qs(location.query)["error"] == ["invalid_target"]
    with psycopg.connect(server.database_url) as conn:
        assert conn.execute("SELECT count(*) FROM parley_oauth_requests WHERE client_id = %s",
                            (phisher.client_id,)).fetchone()[0] == 0


def test_every_consent_page_names_where_the_answer_goes_and_marks_the_name_self_declared(server, tenant):
    with browser(server.base_url) as http:
        host = Flow(http, server.base_url)
        host.register(["https://host.example/callback"], client_name="Parley CLI (official)")
        _, challenge = pkce()
        sign_in = http.get(http.get(host.authorize_url(challenge, redirect_uri="https://host.example/callback"))
                           .headers["location"])
        choose = http.post("/oauth/consent", data={**hidden_fields(sign_in.text), "email": tenant.operator_email,
                                                   "password": PASSWORD})
        for page in (sign_in, choose):
            assert page.status_code == 200
            assert "<b>host.example</b>" in page.text and "self-declared" in page.text
            assert "<b>Parley CLI (official)</b>" in page.text


def test_an_operator_token_from_the_login_flow_ends_after_its_lifetime(server, http, tenant):
    """`parley login`'s token (resource `{base}/api`, loopback redirect) lives 30 days, then is refused."""
    cli = Flow(http, server.base_url)
    cli.register(client_name="Parley CLI", token_endpoint_auth_method="none")
    verifier, challenge = pkce()
    code = cli.code(tenant.operator_email, challenge, resource=server.base_url + "/api")
    issued = cli.token(grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=REDIRECT,
                       resource=server.base_url + "/api")
    assert issued.status_code == 200, issued.text
    assert issued.json()["expires_in"] == API_TOKEN_SECONDS == 30 * 24 * 3600
    operator = {"Authorization": f"Token {issued.json()['access_token']}"}
    stored = hash_secret(issued.json()["access_token"])
    assert http.get("/api/operators/me", headers=operator).status_code == 200
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        left = conn.execute("SELECT extract(epoch FROM expires_at - now()) FROM rm_operator_tokens "
                            "WHERE token_hash = %s", (stored,)).fetchone()[0]
        assert API_TOKEN_SECONDS - 120 < left <= API_TOKEN_SECONDS
        # its lifetime over (the read model's clock moved on, as 30 days would)
        conn.execute("UPDATE rm_operator_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = %s",
                     (stored,))
    refused = http.get("/api/operators/me", headers=operator)
    assert refused.status_code == 401
    assert http.get("/api/websites", headers=operator).status_code == 401
    assert http.get("/api/operators/me", headers=tenant.operator).status_code == 200  # a sign-in's token lives on
