"""`parley login`, `logout` and `whoami`.

Login is OAuth 2.1's authorization code flow for a native client (RFC 8252): the CLI registers itself
as a public client, listens on a free port of 127.0.0.1, sends the browser to the service's sign-in
page with PKCE (S256) and a `state`, receives the code on the loopback redirect, and exchanges it for
an operator access token to the REST API (`resource={url}/api`, see mcp_server/cli_tokens.py). The
token goes only into the profile file (mode 0600): never into a URL, an argument or the shell history.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
import threading
import time
import webbrowser
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from mcp_server.pages import document
from parley.client import TIMEOUT, Api, Profile, Refused, print_json, problem_detail

CALLBACK = "/callback"
WAIT_SECONDS = 600
SCOPES = "parley:read parley:write"
# styled as the sign-in and consent pages before it
ANSWERED = document("Back to the terminal", "<p>Parley received the answer. You can close this window and return "
                                            "to the terminal.</p>").encode()


class _Callback(BaseHTTPRequestHandler):
    """Takes the first request on the callback path as the answer; anything else gets 404."""

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        parts = urlsplit(self.path)
        if parts.path != CALLBACK or self.server.answer is not None:
            self.send_error(404)
            return
        self.server.answer = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(ANSWERED)

    def log_message(self, *args) -> None:
        pass


def _answer(http: httpx.Client, method: str, path: str, **options) -> dict:
    try:
        response = http.request(method, path, **options)
    except httpx.HTTPError as exc:
        raise Refused(f"cannot reach {http.base_url}: {exc}") from None
    if response.status_code >= 400:
        raise Refused(problem_detail(response))
    return response.json()


def _receive(server: HTTPServer) -> dict:
    deadline = time.monotonic() + WAIT_SECONDS
    server.timeout = 1
    while server.answer is None:
        if time.monotonic() > deadline:
            raise Refused("no answer from the browser in time; run `parley login` again")
        server.handle_request()
    return server.answer


def login(url: str, profile: str, open_browser: bool, as_json: bool) -> None:
    url = url.rstrip("/")
    server = HTTPServer(("127.0.0.1", 0), _Callback)
    server.answer = None
    redirect_uri = f"http://127.0.0.1:{server.server_port}{CALLBACK}"
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(24)
    with httpx.Client(base_url=url, timeout=TIMEOUT) as http, server:
        # the server names its public URL (the issuer) and endpoints: the token is for `{issuer}/api`
        metadata = _answer(http, "GET", "/.well-known/oauth-authorization-server")
        issuer, resource = metadata["issuer"], metadata["issuer"] + "/api"
        client = _answer(http, "POST", metadata["registration_endpoint"], json={
            "client_name": "Parley CLI", "redirect_uris": [f"http://127.0.0.1{CALLBACK}"],
            "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "scope": SCOPES})
        address = metadata["authorization_endpoint"] + "?" + urlencode({
            "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
            "code_challenge": challenge, "code_challenge_method": "S256", "state": state, "scope": SCOPES,
            "resource": resource})
        opened = open_browser and _open(address)
        print(("Your browser shows the sign-in page; if not, open:" if opened else
               "Open this address in a browser to sign in:") + f"\n{address}", file=sys.stderr, flush=True)
        answer = _receive(server)
        if answer.get("state") != state:
            raise Refused("the answer's state does not match this login: not completing it")
        if answer.get("iss", issuer) != issuer:
            raise Refused(f"the answer comes from {answer.get('iss')}, not {issuer}: not completing it")
        if "error" in answer:
            raise Refused(f"sign-in refused: {answer.get('error_description') or answer['error']}")
        token = _answer(http, "POST", metadata["token_endpoint"], data={
            "grant_type": "authorization_code", "code": answer.get("code", ""), "redirect_uri": redirect_uri,
            "client_id": client["client_id"], "code_verifier": verifier, "resource": resource})
    stored = Profile(profile, url, token["access_token"])
    path = stored.save()
    session = Api(stored).get("/api/operators/sessions/current")
    if as_json:
        print_json({"url": url, "profile": profile, **session})
    else:
        print(f"Logged in to {url} as {session['email']} ({session['organizationName']}); "
              f"token saved in {path}")


def _open(address: str) -> bool:
    """The platform's browser, if there is one (no display: False, and the address is printed)."""
    opened: list[bool] = []
    # some browsers' launchers block until the browser exits: do not wait for them
    thread = threading.Thread(target=lambda: opened.append(webbrowser.open(address)), daemon=True)
    thread.start()
    thread.join(5)
    return bool(opened and opened[0])


def logout(profile: str) -> None:
    stored = Profile.load(profile)
    try:
        Api(stored).call("DELETE", "/api/operators/sessions/current")
    except Refused as refused:
        if refused.status != 401:  # already revoked on the server: forgetting it is all that is left
            raise
    stored.forget()
    print(f"Logged out of {stored.url} (profile {profile})")


def whoami(profile: str, as_json: bool) -> None:
    stored = Profile.load(profile)
    session = Api(stored).get("/api/operators/sessions/current")
    if as_json:
        print_json({"url": stored.url, "profile": profile, **session})
    else:
        print(f"{stored.url}\n{session['email']}\n{session['organizationName']} ({session['organizationId']})")
