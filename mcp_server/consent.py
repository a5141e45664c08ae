"""The authorization page an operator sees when an MCP host asks to connect: sign in (Email, Password, then
the two-factor code of an operator who turned it on), choose one organization, then Allow or Deny.

The page is plain server-rendered HTML with no script. Each view of it makes a new CSRF token, kept in a
`SameSite=Strict` cookie and in a hidden field, its digest on the authorization request: a form posted
from anywhere else, or from an older view, is refused. The request id in the URL is only a handle; the
password travels in the POST body only, and nothing secret is ever put in a URL.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import uuid
from html import escape
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from commands.two_factor import check_second_factor
from events.sealing import Sealer
from events.store import EventStore
from mcp_server.cli_tokens import API_TOKEN_SECONDS
from mcp_server.oauth import READ, WRITE, ParleyAuthorizationServer, digest, is_loopback
from mcp_server.pages import CONSENT_PATH, HEADERS, document
from projections.views.operators import organizations_of
from projections.views.sign_in import TooManyFailures, attempt_second_factor, attempt_sign_in, signed_in
from projections.views.two_factor import must_enrol
from mcp.server.auth.provider import AuthorizeError

COOKIE = "parley_consent"
SCOPE_WORDS = {
    READ: "read summaries, conversation states and counts, help documents and campaigns",
    WRITE: "send replies as you and resolve or reopen conversations",
}
def _page(title: str, body: str, status: int = 200, csrf: str | None = None) -> HTMLResponse:
    response = HTMLResponse(document(title, body), status_code=status, headers=HEADERS)
    if csrf is not None:
        response.set_cookie(COOKIE, csrf, httponly=True, samesite="strict", path=CONSENT_PATH,
                            secure=False, max_age=900)
    return response


def _problem(message: str, status: int = 400) -> HTMLResponse:
    return _page("Cannot connect", f'<p class="error">{escape(message)}</p>'
                 "<p>Start the connection again from your MCP client.</p>", status)


def _for_api(params: dict) -> bool:
    """A request from `parley login`, for an operator access token to the REST API (`cli_tokens.py`)."""
    return str(params.get("resource", "")).rstrip("/").endswith("/api")


def _scopes(params: dict) -> str:
    if _for_api(params):
        return ("<ul><li>act as you through the REST API, with everything an operator can do in the "
                f"organization you choose, for {API_TOKEN_SECONDS // 86400} days or until you sign out "
                "(<code>parley logout</code>)"
                "</li></ul>")
    return "<ul>" + "".join(f"<li><b>{escape(s)}</b>: {escape(SCOPE_WORDS.get(s, s))}</li>"
                            for s in params["scopes"]) + "</ul>"


def _requester(client_name: str, params: dict) -> str:
    """Who asks, as far as the server can tell: the name is whatever the client registered with, so it is
    marked self-declared; what the server knows is where the answer goes, the redirect URI's host."""
    redirect = str(params["redirect_uri"])
    host = urlsplit(redirect).hostname or redirect
    where = " (this computer)" if is_loopback(redirect) else ""
    return (f'<p>A client calling itself <b>{escape(client_name)}</b> <small>(self-declared: any client may give '
            f'itself any name)</small> asks to connect. Your answer will be sent to <b>{escape(host)}</b>{where}: '
            "continue only if you started this connection and expect that host.</p>")


def _hidden(request_id: str, csrf: str, step: str) -> str:
    return (f'<input type="hidden" name="request" value="{escape(request_id)}">'
            f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
            f'<input type="hidden" name="step" value="{step}">')


class ConsentPage:
    def __init__(self, server: ParleyAuthorizationServer, failures_allowed: int, store: EventStore,
                 sealer: Sealer):
        self.server = server
        self.pool = server.pool
        self.failures_allowed = failures_allowed  # per e-mail address (projections/views/sign_in.py)
        self.store, self.sealer = store, sealer  # the two-factor check opens the secret, records the code it let pass

    async def _request(self, request_id: str) -> tuple | None:
        async with self.pool.connection() as conn:
            return await (await conn.execute(
                "SELECT r.client_id, r.params, r.csrf_hash, r.operator_id, c.info->>'client_name', r.awaiting_code_of "
                "FROM parley_oauth_requests r JOIN parley_oauth_clients c USING (client_id) "
                "WHERE r.id = %s AND r.expires_at > now()", (request_id,))).fetchone()

    async def _new_csrf(self, request_id: str, operator_id: uuid.UUID | None,
                        awaiting_code_of: uuid.UUID | None = None) -> str:
        """A new CSRF token for the next form, and who is signed in so far: `operator_id` once signed in,
        `awaiting_code_of` while the two-factor code of an operator whose password was right is asked for."""
        csrf = secrets.token_urlsafe(32)
        async with self.pool.connection() as conn:
            await conn.execute("UPDATE parley_oauth_requests SET csrf_hash = %s, operator_id = %s, "
                               "awaiting_code_of = %s WHERE id = %s",
                               (digest(csrf), operator_id, awaiting_code_of, request_id))
        return csrf

    def _sign_in(self, request_id: str, csrf: str, client_name: str, params: dict, error: str = "",
                 status: int = 200) -> HTMLResponse:
        title = "Sign in to Parley from the command line" if _for_api(params) else "Connect an MCP client to Parley"
        return _page(title, (
            f"{_requester(client_name, params)}<p>It will be able to:</p>{_scopes(params)}"
            + (f'<p class="error">{escape(error)}</p>' if error else "")
            + f'<form method="post" action="{CONSENT_PATH}">{_hidden(request_id, csrf, "signin")}'
            '<label>Email <input type="email" name="email" autocomplete="username" required></label>'
            '<label>Password <input type="password" name="password" autocomplete="current-password" required>'
            '</label><button type="submit">Sign in</button></form>'), status, csrf)

    def _code(self, request_id: str, csrf: str, client_name: str, params: dict, error: str = "",
              status: int = 200) -> HTMLResponse:
        return _page("Two-factor sign-in", (
            _requester(client_name, params)
            + (f'<p class="error">{escape(error)}</p>' if error else "")
            + f'<form method="post" action="{CONSENT_PATH}">{_hidden(request_id, csrf, "code")}'
            '<label>Code from your authenticator app, or a recovery code <input name="code" '
            'autocomplete="one-time-code" inputmode="text" required autofocus></label>'
            '<button type="submit">Continue</button></form>'), status, csrf)

    async def _organizations(self, operator_id: uuid.UUID) -> list[tuple[uuid.UUID, str]]:
        async with self.pool.connection() as conn:
            return await organizations_of(conn, operator_id)

    def _choose(self, request_id: str, csrf: str, client_name: str, params: dict,
                organizations: list[tuple[uuid.UUID, str]], error: str = "", status: int = 200) -> HTMLResponse:
        choices = "".join(
            f'<label><input type="radio" name="org" value="{org_id}"{" checked" if len(organizations) == 1 else ""}>'
            f" {escape(name)}</label>" for org_id, name in organizations)
        return _page("Choose an organization", (
            _requester(client_name, params)
            + "<p>The connection is bound to one organization for its whole life. It will be able to:</p>"
            + _scopes(params)
            + (f'<p class="error">{escape(error)}</p>' if error else "")
            + f'<form method="post" action="{CONSENT_PATH}">{_hidden(request_id, csrf, "decide")}'
            f"<fieldset><legend>Organization</legend>{choices}</fieldset>"
            '<button type="submit" name="decision" value="allow">Allow</button>'
            '<button type="submit" name="decision" value="deny">Deny</button></form>'), status, csrf)

    async def show(self, request: Request) -> Response:
        request_id = request.query_params.get("request", "")
        found = request_id and await self._request(request_id)
        if not found:
            return _problem("This authorization request has expired or was already answered.")
        client_id, params, _, _, client_name, _ = found
        csrf = await self._new_csrf(request_id, None)
        return self._sign_in(request_id, csrf, client_name or client_id, params)

    async def submit(self, request: Request) -> Response:
        form = await request.form()
        request_id, csrf = str(form.get("request", "")), str(form.get("csrf", ""))
        found = request_id and await self._request(request_id)
        if not found:
            return _problem("This authorization request has expired or was already answered.")
        client_id, params, csrf_hash, operator_id, client_name, awaiting_code_of = found
        cookie = request.cookies.get(COOKIE, "")
        if not (csrf and csrf_hash and hmac.compare_digest(csrf, cookie)
                and hmac.compare_digest(digest(csrf), csrf_hash)):
            return _problem("This form is out of date or did not come from this page.", 403)
        name = client_name or client_id
        if form.get("step") == "signin":
            return await self._signed_in(request_id, name, params, str(form.get("email", "")),
                                         str(form.get("password", "")))
        if form.get("step") == "code" and awaiting_code_of is not None:
            return await self._second_factor(request_id, name, params, awaiting_code_of, str(form.get("code", "")))
        if operator_id is None:
            return _problem("Sign in first.")
        if form.get("decision") == "deny":
            await self._forget(request_id)
            return RedirectResponse(self.server.redirect(params, error="access_denied",
                                                         error_description="the operator denied access"),
                                    303, headers=HEADERS)
        if form.get("decision") != "allow":
            return _problem("Choose Allow or Deny.")
        organizations = await self._organizations(operator_id)
        chosen = next((org_id for org_id, _ in organizations if str(org_id) == form.get("org")), None)
        if chosen is None:
            csrf = await self._new_csrf(request_id, operator_id)
            return self._choose(request_id, csrf, name, params, organizations, "Choose one of your organizations.",
                                400)
        async with self.pool.connection() as conn:
            enrolment_missing = await must_enrol(conn, operator_id, chosen)
        if enrolment_missing:
            return _problem("This organization requires two-factor sign-in: turn it on in the dashboard "
                            "(your profile), then connect again.", 403)
        try:
            code = await self.server.issue_code(request_id, params, client_id, operator_id, chosen)
        except AuthorizeError as exc:
            return _problem(exc.error_description or exc.error)
        return RedirectResponse(self.server.redirect(params, code=code), 303, headers=HEADERS)

    async def _signed_in(self, request_id: str, client_name: str, params: dict, email: str,
                         password: str) -> Response:
        try:
            found = await attempt_sign_in(self.pool, email, password, self.failures_allowed)
        except TooManyFailures as refused:
            csrf = await self._new_csrf(request_id, None)
            page = self._sign_in(request_id, csrf, client_name, params, f"Sign-in paused: {refused}.", 429)
            page.headers["Retry-After"] = str(refused.retry_after)
            return page
        if found is None:
            csrf = await self._new_csrf(request_id, None)
            return self._sign_in(request_id, csrf, client_name, params, "Unknown e-mail address or wrong password.",
                                 401)
        if await asyncio.to_thread(check_second_factor, self.store, self.sealer, found.id, None) == "missing":
            csrf = await self._new_csrf(request_id, None, awaiting_code_of=found.id)
            return self._code(request_id, csrf, client_name, params)
        await signed_in(self.pool, found.id)
        csrf = await self._new_csrf(request_id, found.id)
        return self._choose(request_id, csrf, client_name, params, await self._organizations(found.id))

    async def _second_factor(self, request_id: str, client_name: str, params: dict, operator_id: uuid.UUID,
                             code: str) -> Response:
        """The code step, for the operator whose password was right: the same check as the REST sign-in, and
        each try counted as an attempt of their address."""
        try:
            await attempt_second_factor(self.pool, operator_id, self.failures_allowed)
        except TooManyFailures as refused:
            csrf = await self._new_csrf(request_id, None, awaiting_code_of=operator_id)
            page = self._code(request_id, csrf, client_name, params, f"Sign-in paused: {refused}.", 429)
            page.headers["Retry-After"] = str(refused.retry_after)
            return page
        if await asyncio.to_thread(check_second_factor, self.store, self.sealer, operator_id, code) == "wrong":
            csrf = await self._new_csrf(request_id, None, awaiting_code_of=operator_id)
            return self._code(request_id, csrf, client_name, params, "The code is wrong or was used already.", 401)
        await signed_in(self.pool, operator_id)
        csrf = await self._new_csrf(request_id, operator_id)
        return self._choose(request_id, csrf, client_name, params, await self._organizations(operator_id))

    async def _forget(self, request_id: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute("DELETE FROM parley_oauth_requests WHERE id = %s", (request_id,))
