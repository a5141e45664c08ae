"""Connecting to Parley's MCP server as a host does: the SDK's own client (`streamable_http_client` with
`OAuthClientProvider`) over real HTTP, with a headless redirect and callback handler that completes the
consent page the way a person does (sign in, choose an organization, Allow), over HTTP.

`Flow` drives the same OAuth steps by hand, for the tests that must send what no well-behaved client
sends (plain PKCE, a wrong verifier, a reused code, a foreign redirect URI)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

PASSWORD = "correct horse"  # tests.support.servers.make_tenant's operator password
REDIRECT = "http://127.0.0.1:33418/callback"
HIDDEN = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')
ORG_RADIO = re.compile(r'<input type="radio" name="org" value="([^"]+)"[^>]*> ([^<]+)</label>')


def hidden_fields(page: str) -> dict[str, str]:
    return dict(HIDDEN.findall(page))


def organizations(page: str) -> dict[str, str]:
    """Organization name -> id, from the consent page's radio buttons."""
    return {name: org_id for org_id, name in ORG_RADIO.findall(page)}


@dataclass
class Consent:
    """A person at the consent page: signs in, picks `org_name` (or the only organization), Allow or Deny."""

    base_url: str
    email: str
    password: str = PASSWORD
    org_name: str | None = None
    decision: str = "allow"
    authorize_url: str = ""
    approvals: list[dict] = field(default_factory=list)  # what each completed consent saw and answered

    async def redirect(self, url: str) -> None:
        self.authorize_url = url

    async def callback(self) -> AuthorizationCodeResult:
        answer = complete_consent(self.base_url, self.authorize_url, self.email, self.password, self.org_name,
                                  self.decision)
        self.approvals.append({"scope": parse_qs(urlsplit(self.authorize_url).query).get("scope", [""])[0],
                               "answer": answer})
        assert answer.get("iss") == [self.base_url], answer  # RFC 9207: the issuer comes back with the answer
        return AuthorizationCodeResult(code=answer["code"][0], state=answer.get("state", [None])[0],
                                       iss=answer["iss"][0])


def browser(base_url: str) -> httpx.Client:
    """A person's browser: its own cookies, not following the redirect back to the client."""
    return httpx.Client(base_url=base_url, timeout=30)


def complete_consent(base_url: str, authorize_url: str, email: str, password: str,
                     org_name: str | None = None, decision: str = "allow") -> dict[str, list[str]]:
    """Follows an authorization request through the consent page; returns the query of the redirect back."""
    with browser(base_url) as http:
        return _consent(http, authorize_url, email, password, org_name, decision)


def _consent(http: httpx.Client, authorize_url: str, email: str, password: str, org_name: str | None,
             decision: str) -> dict[str, list[str]]:
    to_consent = http.get(authorize_url)
    assert to_consent.status_code == 302, to_consent.text
    assert to_consent.headers["location"].startswith(str(http.base_url).rstrip("/") + "/oauth/consent?"), \
        to_consent.headers["location"]
    sign_in = http.get(to_consent.headers["location"])
    assert sign_in.status_code == 200 and 'name="email"' in sign_in.text and 'name="password"' in sign_in.text
    choose = http.post("/oauth/consent", data={**hidden_fields(sign_in.text), "email": email, "password": password})
    assert choose.status_code == 200, choose.text
    orgs = organizations(choose.text)
    org_id = orgs[org_name] if org_name else next(iter(orgs.values()))
    done = http.post("/oauth/consent", data={**hidden_fields(choose.text), "org": org_id, "decision": decision})
    assert done.status_code == 303, done.text
    return parse_qs(urlsplit(done.headers["location"]).query)


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@asynccontextmanager
async def mcp_session(base_url: str, consent: Consent, storage: MemoryStorage | None = None
                      ) -> AsyncIterator[ClientSession]:
    oauth = OAuthClientProvider(
        server_url=base_url + "/mcp",
        client_metadata=OAuthClientMetadata(client_name="Test host", redirect_uris=[REDIRECT],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"]),
        storage=storage or MemoryStorage(), redirect_handler=consent.redirect, callback_handler=consent.callback)
    async with httpx2.AsyncClient(auth=oauth, timeout=60) as http, \
            streamable_http_client(base_url + "/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@dataclass
class Flow:
    """The OAuth steps by hand, with a registered client."""

    http: httpx.Client
    base_url: str
    client_id: str = ""
    client_secret: str | None = None

    def register(self, redirect_uris: list[str] | None = None, **metadata: Any) -> dict:
        response = self.http.post("/oauth/register", json={
            "client_name": "Hand-made client", "redirect_uris": redirect_uris or [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], **metadata})
        assert response.status_code == 201, response.text
        body = response.json()
        self.client_id, self.client_secret = body["client_id"], body.get("client_secret")
        return body

    def authorize_url(self, challenge: str | None, *, method: str | None = "S256", redirect_uri: str = REDIRECT,
                      scope: str = "parley:read parley:write", resource: str | None = "default",
                      state: str = "st-123") -> str:
        params = {"response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri,
                  "scope": scope, "state": state}
        if challenge is not None:
            params["code_challenge"] = challenge
        if method is not None:
            params["code_challenge_method"] = method
        if resource is not None:
            params["resource"] = self.base_url + "/mcp" if resource == "default" else resource
        return str(httpx.URL(self.base_url + "/oauth/authorize", params=params))

    def code(self, email: str, challenge: str, org_name: str | None = None, **kwargs: Any) -> str:
        answer = complete_consent(self.base_url, self.authorize_url(challenge, **kwargs), email, PASSWORD, org_name)
        return answer["code"][0]

    def token(self, **form: str) -> httpx.Response:
        return self.http.post("/oauth/token", data={"client_id": self.client_id, "client_secret": self.client_secret,
                                                    **form})

    def exchange(self, code: str, verifier: str, redirect_uri: str = REDIRECT) -> httpx.Response:
        return self.token(grant_type="authorization_code", code=code, code_verifier=verifier,
                          redirect_uri=redirect_uri)

    def tokens(self, email: str, scope: str = "parley:read parley:write", org_name: str | None = None) -> dict:
        verifier, challenge = pkce()
        response = self.exchange(self.code(email, challenge, org_name=org_name, scope=scope), verifier)
        assert response.status_code == 200, response.text
        return response.json()


def rpc(http: httpx.Client, access_token: str, method: str, params: dict | None = None) -> httpx.Response:
    """One JSON-RPC request to /mcp, as a raw HTTP POST (stateless: no initialize needed)."""
    return http.post("/mcp", headers={"Authorization": f"Bearer {access_token}",
                                      "Accept": "application/json, text/event-stream",
                                      "MCP-Protocol-Version": "2025-06-18"},
                     json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})


def structured_result(http: httpx.Client, access_token: str, tool: str, **arguments: Any) -> dict:
    """A tool's `structuredContent`, over one raw request; a tool error fails the test."""
    answer = rpc(http, access_token, "tools/call", {"name": tool, "arguments": arguments})
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


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
