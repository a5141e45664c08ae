"""Rate limits: the RateLimit headers on every kind of response, 429s, per-key and default limits,
the anonymous per-address limit, X-Forwarded-For only through trusted proxies, and one limit shared by
several API processes."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import uuid

import httpx
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from tests.support.servers import ALL_KEY_SCOPES, Server, basic, make_server, make_tenant, token
from tests.support.mcp_helpers import PASSWORD, Flow, _consent, hidden_fields, pkce, rpc
from readapi.clientaddress import TrustedProxies, limit_key
from readapi.ratelimit import WINDOW_SECONDS, Policy, RateLimiter

POLICY = re.compile(r'^"(?P<name>[a-z]+)";q=(?P<q>\d+);w=(?P<w>\d+)$')
LIMIT = re.compile(r'^"(?P<name>[a-z]+)";r=(?P<r>\d+);t=(?P<t>\d+)$')


def limit_of(response) -> dict:
    """The response's policy name, quota, window, remaining and reset; asserts their structured form."""
    policy = POLICY.match(response.headers["RateLimit-Policy"])
    current = LIMIT.match(response.headers["RateLimit"])
    assert policy and current, response.headers
    assert policy["name"] == current["name"]
    assert response.headers["API-Version"] == "1"
    assert 1 <= int(current["t"]) <= int(policy["w"])
    return {"name": policy["name"], "q": int(policy["q"]), "w": int(policy["w"]), "r": int(current["r"]),
            "t": int(current["t"])}


def assert_refused(response, policy: str, quota: int) -> None:
    assert response.status_code == 429
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["status"] == 429 and problem["title"] == "Too Many Requests" and problem["type"]
    assert str(quota) in problem["detail"]
    assert 1 <= int(response.headers["Retry-After"]) <= WINDOW_SECONDS
    assert limit_of(response) | {"t": 0} == {"name": policy, "q": quota, "w": WINDOW_SECONDS, "r": 0, "t": 0}


def test_every_response_carries_the_headers_of_its_credential(http, tenant):
    key = tenant.key("websites:read")
    answers = [
        http.get("/api/websites", headers=key),  # 200
        http.get(f"/api/customers/{uuid.uuid4()}", headers=key),  # 403: scope
        http.get("/api/websites/no-such-site", headers=key),  # 404 from a handler
        http.get("/api/no-such-collection", headers=key),  # 404 from the router
        http.get("/api/websites", headers={**key, "API-Version": "2"}),  # 400 from the middleware
        http.get("/api/websites?api_key=x", headers=key),  # 400 from the middleware
        http.patch("/api/websites", headers=key),  # 405
    ]
    assert [a.status_code for a in answers] == [200, 403, 404, 404, 400, 400, 405]
    limits = [limit_of(a) for a in answers]
    assert {(x["name"], x["q"], x["w"]) for x in limits} == {("apikey", 600, 60)}
    assert [x["r"] for x in limits] == list(range(599, 592, -1))  # one count per request, whatever its fate

    operator = limit_of(http.get("/api/websites", headers=tenant.operator))
    assert (operator["name"], operator["q"]) == ("operator", 1200)


@pytest.mark.parametrize("headers", [{}, basic("pk_unknown"), token("pt_unknown"), {"Authorization": "Nope x"}])
def test_a_401_carries_the_anonymous_limit(http, headers):
    response = http.get("/api/conversations", headers=headers)
    assert response.status_code == 401
    assert limit_of(response)["name"] == "anonymous"


def test_an_api_key_over_its_own_rate_gets_429_and_nothing_is_written(http, tenant):
    key = tenant.key(ALL_KEY_SCOPES, rate=3)
    before = http.get("/api/customers", headers=tenant.operator).json()
    for remaining in (2, 1, 0):
        response = http.post("/api/customers", headers=key, json={"email": f"c{remaining}@example.com",
                                                                     "websiteId": str(tenant.website_id)})
        assert response.status_code == 200
        assert limit_of(response)["r"] == remaining
    refused = http.post("/api/customers", headers=key, json={"email": "over@example.com",
                                                                            "websiteId": str(tenant.website_id)})
    assert_refused(refused, "apikey", 3)
    assert_refused(http.get("/api/customers", headers=key), "apikey", 3)
    emails = {c["email"] for c in http.get("/api/customers", headers=tenant.operator).json()}
    assert len(emails) == len(before) + 3 and "over@example.com" not in emails
    # another key of the same organization has its own count
    assert http.get("/api/customers", headers=tenant.key(ALL_KEY_SCOPES, rate=3)).status_code == 200


def test_429_on_bad_input_too_is_a_429(http, tenant):
    key = tenant.key(ALL_KEY_SCOPES, rate=1)
    assert http.get("/api/websites", headers=key).status_code == 200
    assert_refused(http.post("/api/customers", headers=key, content=b"{not json"), "apikey", 1)
    assert_refused(http.get("/api/websites", headers={**key, "API-Version": "7"}), "apikey", 1)


@pytest.fixture(scope="module")
def limited(infra, tmp_path_factory):
    """Small default limits; the test client's address (127.0.0.1) is not a trusted proxy."""
    server = make_server(infra, tmp_path_factory.mktemp("limited"), PARLEY_RATE_ANONYMOUS_PER_MINUTE="3",
                         PARLEY_RATE_OPERATOR_PER_MINUTE="4", PARLEY_RATE_APIKEY_PER_MINUTE="5",
                         PARLEY_TRUSTED_PROXIES="192.0.2.0/24").start()
    yield server
    server.stop()


def test_operator_tokens_and_keys_without_a_rate_get_the_defaults(limited):
    tenant = make_tenant(limited)
    with limited.client() as client:
        for headers, policy, quota in ((tenant.operator, "operator", 4), (tenant.key(), "apikey", 5)):
            for remaining in range(quota - 1, -1, -1):
                response = client.get("/api/websites", headers=headers)
                assert response.status_code == 200 and limit_of(response)["r"] == remaining
            assert_refused(client.get("/api/websites", headers=headers), policy, quota)


def test_the_anonymous_limit_ignores_a_spoofed_forwarded_for(limited):
    with limited.client() as client:
        answers = [client.get("/api/sandbox/documents", headers={"X-Forwarded-For": f"198.51.100.{i}"})
                   for i in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert [limit_of(a)["r"] for a in answers] == [2, 1, 0]
        assert_refused(client.get("/api/sandbox/documents", headers={"X-Forwarded-For": "198.51.100.77"}),
                       "anonymous", 3)
        assert_refused(client.post("/api/sandbox/documentsummaryjobs"), "anonymous", 3)
        with psycopg.connect(limited.database_url) as conn:
            assert conn.execute("SELECT count(*) FROM rm_sandbox_jobs").fetchone()[0] == 0
        # without a valid credential, the same address's anonymous count applies outside the sandbox too
        assert_refused(client.get("/api/websites", headers=basic("pk_guess")), "anonymous", 3)


@pytest.fixture(scope="module")
def proxied(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("proxied"), PARLEY_RATE_ANONYMOUS_PER_MINUTE="3",
                         PARLEY_RATE_SIGNIN_PER_MINUTE="5", PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE="2",
                         PARLEY_TRUSTED_PROXIES="10.0.0.0/8, 127.0.0.1").start()
    yield server
    server.stop()


def test_behind_a_trusted_proxy_each_client_address_has_its_own_limit(proxied):
    with proxied.client() as client:
        def documents(forwarded_for: str):
            return client.get("/api/sandbox/documents", headers={"X-Forwarded-For": forwarded_for})

        assert [documents("203.0.113.1").status_code for _ in range(3)] == [200, 200, 200]
        assert_refused(documents("203.0.113.1"), "anonymous", 3)
        assert limit_of(documents("203.0.113.2"))["r"] == 2
        # a hop through another trusted proxy still names the client
        assert_refused(documents("203.0.113.1, 10.1.2.3"), "anonymous", 3)
        # what the client wrote left of the address our proxy saw does not escape the limit
        spoofed = [documents(f"198.51.100.{i}, 203.0.113.50") for i in range(4)]
        assert [s.status_code for s in spoofed] == [200, 200, 200, 429]


def test_one_address_starts_a_bounded_number_of_chat_sessions(proxied):
    """Each chat session has its own request budget, so starting sessions is bounded per address (2 a
    minute here, below the address's 3 anonymous requests): the third answers 429 and creates no customer;
    another address still starts one."""
    tenant = make_tenant(proxied)
    with proxied.client() as client:
        def start(address: str):
            return client.post("/api/chat/sessions", json={"websiteId": str(tenant.website_id)},
                               headers={"X-Forwarded-For": address})

        assert [start("203.0.113.30").status_code for _ in range(2)] == [200, 200]
        assert_refused(start("203.0.113.30"), "chatsessions", 2)
        assert len(client.get("/api/customers", headers=token(tenant.operator_token)).json()) == 2
        assert start("203.0.113.31").status_code == 200


def test_hammering_the_sign_in_is_refused_and_others_still_sign_in(proxied):
    """A password guesser spends their own address's budget of the OAuth endpoints (5 a minute here, the
    authorization request and the consent page's view included): the fourth guess and their token requests
    answer 429 with Retry-After; an operator elsewhere signs in."""
    tenant = make_tenant(proxied)
    with proxied.client() as http:
        def client_at(address: str) -> httpx.Client:
            return httpx.Client(base_url=proxied.base_url, timeout=30, headers={"X-Forwarded-For": address})

        operator, guesser = client_at("203.0.113.7"), client_at("203.0.113.66")
        with operator, guesser:
            registered = Flow(http, proxied.base_url)
            registered.register()  # from the host's own address
            flow = Flow(operator, proxied.base_url, registered.client_id, registered.client_secret)
            verifier, challenge = pkce()
            address = flow.authorize_url(challenge)
            sign_in = guesser.get(guesser.get(address).headers["location"])  # the guesser's first 2 of 5
            for attempt in range(3):
                guessed = guesser.post("/oauth/consent", data={**hidden_fields(sign_in.text),
                                                               "email": tenant.operator_email, "password": f"x{attempt}"})
                assert guessed.status_code == 401 and "wrong password" in guessed.text
                assert limit_of(guessed)["name"] == "signin"
                sign_in = guessed
            refused = guesser.post("/oauth/consent", data={**hidden_fields(sign_in.text),
                                                           "email": tenant.operator_email, "password": PASSWORD})
            # even the right password: the guesser cannot tell; the person at the form reads a page
            assert refused.status_code == 429 and refused.headers["Content-Type"] == "text/html; charset=utf-8"
            assert "Too many sign-in attempts" in refused.text and "more than 5 requests in a minute" in refused.text
            assert 1 <= int(refused.headers["Retry-After"]) <= WINDOW_SECONDS
            assert limit_of(refused) | {"t": 0} == {"name": "signin", "q": 5, "w": WINDOW_SECONDS, "r": 0, "t": 0}
            assert_refused(guesser.post("/oauth/token", data={"grant_type": "authorization_code", "code": "x"}),
                           "signin", 5)

            answer = _consent(operator, address, tenant.operator_email, PASSWORD, None, "allow")  # 1 to 4 of 5
            issued = flow.exchange(answer["code"][0], verifier)  # 5 of 5
            assert issued.status_code == 200, issued.text
            assert rpc(http, issued.json()["access_token"], "tools/list").status_code == 200


def test_hammering_the_authorization_endpoint_is_refused_and_writes_nothing_more(proxied):
    """Each authorization request writes a row kept 15 minutes: it and the consent page's view count in the
    sign-in limit, so a flood from one address stops at the limit (a page, since a browser is there)."""
    with proxied.client() as http, httpx.Client(base_url=proxied.base_url, timeout=30,
                                                 headers={"X-Forwarded-For": "203.0.113.99"}) as flooder:
        registered = Flow(http, proxied.base_url)
        registered.register()
        address = registered.authorize_url(pkce()[1])
        answers = [flooder.get(address) for _ in range(6)]
        assert [a.status_code for a in answers] == [302] * 5 + [429]
        assert answers[-1].headers["Content-Type"] == "text/html; charset=utf-8"
        assert "Too many sign-in attempts" in answers[-1].text
        viewed = flooder.get(answers[0].headers["location"])  # the consent page's view counts too
        assert viewed.status_code == 429 and "Too many sign-in attempts" in viewed.text
        assert limit_of(viewed) | {"t": 0} == {"name": "signin", "q": 5, "w": WINDOW_SECONDS, "r": 0, "t": 0}
        with psycopg.connect(proxied.database_url) as conn:
            pending = conn.execute("SELECT count(*) FROM parley_oauth_requests WHERE client_id = %s",
                                   (registered.client_id,)).fetchone()[0]
        assert pending == 5


@pytest.mark.parametrize("peer, forwarded_for, client", [
    ("192.0.2.9", "203.0.113.1", "192.0.2.9"),  # untrusted peer: header ignored
    ("127.0.0.1", None, "127.0.0.1"),
    ("127.0.0.1", "203.0.113.1", "203.0.113.1"),
    ("127.0.0.1", "1.1.1.1, 203.0.113.1", "203.0.113.1"),
    ("127.0.0.1", "203.0.113.1, 10.0.0.2", "203.0.113.1"),
    ("127.0.0.1", "garbage, 10.0.0.2", "10.0.0.2"),
    ("127.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),
    ("::1", "2001:db8::1", "2001:db8::1"),
    (None, "203.0.113.1", "unknown"),
])
def test_client_address(peer, forwarded_for, client):
    assert TrustedProxies("127.0.0.1, 10.0.0.0/8, ::1").client_address(peer, forwarded_for) == client


@pytest.mark.parametrize("address, key", [
    ("203.0.113.1", "203.0.113.1"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
    ("::ffff:203.0.113.1", "203.0.113.1"),
    ("unknown", "unknown"),
])
def test_the_anonymous_limit_counts_an_ipv6_client_by_its_64(address, key):
    assert limit_key(address) == key


def test_a_malformed_trusted_proxy_list_is_refused():
    with pytest.raises(ValueError, match="PARLEY_TRUSTED_PROXIES"):
        TrustedProxies("10.0.0.0/8, not-a-network")


def test_limiters_sharing_a_database_admit_exactly_the_quota(infra):
    """Two limiters stand for two processes; leases let each serve most requests from memory."""
    async def scenario(quota: int, hits: int) -> list[bool]:
        async with AsyncConnectionPool(database_url, min_size=1, max_size=4, kwargs={"autocommit": True}) as pool:
            first, second = RateLimiter(pool), RateLimiter(pool)
            policy, bucket = Policy("apikey", quota), f"apikey:{uuid.uuid4()}"
            decisions = await asyncio.gather(*[(first, second)[i % 2].hit(bucket, policy) for i in range(hits)])
            return [d.allowed for d in decisions]

    database_url = infra.new_database()
    for quota in (1, 10, 600):
        allowed = asyncio.run(scenario(quota, quota * 2 + 7))
        assert allowed.count(True) == quota


def test_one_limit_across_two_api_processes(infra, tmp_path):
    first = make_server(infra, tmp_path / "a")
    shared = dict(database_url=first.database_url, nats_url=first.nats_url, env=first.env)
    workers = Server(**shared, data_dir=tmp_path / "w")
    second = Server(**shared, data_dir=tmp_path / "b")
    processes = [workers.start("--role", "workers"), first.start("--role", "api"), second.start("--role", "api")]
    try:
        tenant = make_tenant(workers)
        key = tenant.key(rate=10)
        with first.client() as one, second.client() as two:
            answers = [(one, two)[i % 2].get("/api/websites", headers=key) for i in range(16)]
        assert [a.status_code for a in answers] == [200] * 10 + [429] * 6
        assert [limit_of(a)["r"] for a in answers[:10]] == list(range(9, -1, -1))
        for refused in answers[10:]:
            assert_refused(refused, "apikey", 10)
    finally:
        for process in reversed(processes):
            process.stop()


def test_the_rate_set_by_the_cli_is_the_key_s_limit(server, http, tenant):
    created = subprocess.run(
        [sys.executable, "-m", "parley.cli", "admin", "apikey", "create", "--org", str(tenant.org_id),
         "--scopes", "websites:read", "--rate", "2/min", "--data-dir", str(server.data_dir)],
        env=server.env, capture_output=True, text=True, timeout=60, check=True)
    key = basic(json.loads(created.stdout)["secret"])
    assert [http.get("/api/websites", headers=key).status_code for _ in range(2)] == [200, 200]
    assert_refused(http.get("/api/websites", headers=key), "apikey", 2)
