"""Single sign-on with OpenID Connect over HTTP: the owners' settings, the sign-in page's lookup by e-mail
address, and the browser's round trip through the identity provider (readapi/oidc.py).

The start and the callback are navigations, not API calls: they answer 302 whatever happens. The callback
lands on `/app/#sso-token=<token>` (a fragment: the browser never sends it to a server, and the page
stores the token and strips it from the address at once) or on `/app/#sso-error=<why>`."""

from __future__ import annotations

import uuid
from urllib.parse import quote

from litestar import Request, Response, get, put
from litestar.params import FromPath

from commands import sso
from commands.errors import CommandError, Invalid, NotFound
from events.ids import parse_id
from projections.views.sso import SsoButton, SsoSettingsView, sso_button, sso_settings
from readapi import oidc
from readapi.auth import OWNER, PUBLIC, Authenticated, Decoded
from readapi.clientaddress import CLIENT_ADDRESS
from readapi.openapi import describe, query
from readapi.services import caught_up, json_response, run_command, services, written

READ_MODELS = ("sso",)
LANDING = "/app/"


def _allow_private(request: Request) -> bool:
    return services(request).settings.webhook_allow_private


def _redirect_uri(request: Request) -> str:
    found = services(request)
    return (found.settings.public_url or found.base_url).rstrip("/") + oidc.CALLBACK_PATH


def _redirect(location: str, cookie: str | None = None) -> Response:
    """A 302 no cache keeps and no Referer repeats; `cookie` a Set-Cookie header."""
    headers = {"Location": location, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    if cookie:
        headers["Set-Cookie"] = cookie
    return Response(b"", status_code=302, headers=headers)


def _browser_cookie(request: Request, value: str, max_age: int) -> str:
    secure = "; Secure" if _redirect_uri(request).startswith("https:") else ""
    return (f"{oidc.BROWSER_COOKIE}={value}; Path={oidc.CALLBACK_PATH}; Max-Age={max_age}; HttpOnly; "
            f"SameSite=Lax{secure}")


def _landing(request: Request, *, token: str | None = None, error: str | None = None) -> Response:
    fragment = f"sso-token={token}" if token else f"sso-error={quote(error or 'single sign-on failed')}"
    return _redirect(f"{LANDING}#{fragment}", _browser_cookie(request, "", 0))


async def _settings_view(request: Request, org_id: uuid.UUID) -> SsoSettingsView:
    async with services(request).pool.connection() as conn:
        found = await sso_settings(conn, org_id)
    if found is None:
        raise NotFound("single sign-on is not configured for this organization")
    return found


@describe("The organization's single sign-on settings (owners); never the client secret: `clientSecretSet` "
          "says one is stored. 404 until it is configured", OWNER, answer=SsoSettingsView, errors=(404,),
          operation_id="getSsoSettings")
@get("/api/organization/sso")
async def get_sso(request: Request, principal: Authenticated) -> Response:
    await caught_up(request, READ_MODELS)
    return json_response(await _settings_view(request, principal.org_id))


@describe("Configure single sign-on with an OpenID Connect provider (owners): its issuer (whose discovery "
          "document is fetched now, to check it), the client registered there, the e-mail domains whose "
          "verified addresses may sign in, the role (agent or admin) of the operators it brings in, the "
          "button's label. `clientSecret` is write-only: without it the stored one is kept",
          OWNER, body=sso.SsoSettings, answer=SsoSettingsView,
          example={"issuer": "https://login.example.com", "clientId": "parley", "clientSecret": "s3cret",
                   "allowedDomains": ["example.com"], "defaultRole": "agent", "buttonLabel": "Example ID",
                   "enabled": True}, operation_id="configureSso")
@put("/api/organization/sso")
async def put_sso(request: Request, principal: Authenticated, payload: Decoded[sso.SsoSettings]) -> Response:
    try:
        await oidc.discover(payload.issuer.strip(), _allow_private(request))
    except oidc.SignInFailed as exc:
        raise Invalid(str(exc), "issuer") from None
    created = await run_command(request, sso.configure_sso, services(request).sealer, principal, payload)
    await written(request, created, READ_MODELS)
    return json_response(await _settings_view(request, principal.org_id), created)


@describe("The single sign-on the sign-in page offers: the enabled one of the organization allowing the "
          "e-mail address's domain, or of `organizationId`; 404 when there is none", PUBLIC, answer=SsoButton,
          query=(query("email", str, "An e-mail address (or only its domain) of the person signing in."),
                 query("organizationId", uuid.UUID, "The organization, for a sign-in link that names it.")),
          errors=(404,), operation_id="discoverSso")
@get("/api/sso/discover")
async def discover(request: Request) -> Response:
    email = request.query_params.get("email", "")
    org = request.query_params.get("organizationId")
    async with services(request).pool.connection() as conn:
        found = await sso_button(conn, org_id=parse_id(org), domain=None) if org else (
            await sso_button(conn, domain=email.rsplit("@", 1)[-1].strip().lower()) if email.strip() else None)
    if found is None:
        raise NotFound("no single sign-on for this address")
    return json_response(found)


@describe("Start signing in with the organization's identity provider: 302 to its authorization endpoint "
          "(authorization code, `state`, `nonce`, PKCE S256), with a cookie binding the sign-in to this "
          "browser; a failure lands on /app/ with the reason", PUBLIC, status=302, position=False,
          operation_id="startSsoSignIn")
@get("/api/sso/{organization_id:str}/start", status_code=302)
async def start(request: Request, organization_id: FromPath[str]) -> Response:
    org_id = parse_id(organization_id)
    settings = org_id and await run_command(request, sso.current_sso, services(request).sealer, org_id)
    if not settings or not settings.enabled:
        return _landing(request, error="single sign-on is not enabled for this organization")
    try:
        url, browser = await oidc.start(services(request).pool, settings, _redirect_uri(request),
                                        _allow_private(request))
    except oidc.SignInFailed as exc:
        return _landing(request, error=str(exc))
    return _redirect(url, _browser_cookie(request, browser, oidc.REQUEST_SECONDS))


@describe("Where the identity provider sends the browser back: checks the state (once, from the browser "
          "that started it), exchanges the code, validates the ID token (signature, issuer, audience, nonce, "
          "expiry) and requires a verified e-mail address of an allowed domain; signs in its operator "
          "(created with the default role if new, made a member if it belongs to other organizations; a "
          "disabled one is refused) and lands on /app/ with the token in the address's fragment, or with "
          "the reason it failed", PUBLIC, status=302, position=False,
          query=(query("state", str, "The state of the sign-in."),
                 query("code", str, "The authorization code."),
                 query("error", str, "The provider's error code, when it refused."),
                 query("error_description", str, "The provider's words for it.")), operation_id="completeSsoSignIn")
@get("/api/sso/callback", status_code=302)
async def callback(request: Request) -> Response:
    params = request.query_params
    try:
        if not params.get("state"):
            raise oidc.SignInFailed("the identity provider's answer has no state; start again")
        pending = await oidc.take(services(request).pool, params["state"], request.cookies.get(oidc.BROWSER_COOKIE))
        if params.get("error"):
            raise oidc.SignInFailed(f"the identity provider refused: {params.get('error_description') or params['error']}")
        settings = await run_command(request, sso.current_sso, services(request).sealer, pending.org_id)
        if settings is None or not settings.enabled:
            raise oidc.SignInFailed("single sign-on is not enabled for this organization")
        if not params.get("code"):
            raise oidc.SignInFailed("the identity provider's answer has no code")
        email = await oidc.verified_email(settings, pending, params["code"], _redirect_uri(request),
                                          _allow_private(request))
        domain = email.rsplit("@", 1)[1]
        if domain not in settings.allowed_domains:
            raise oidc.SignInFailed(f"addresses of {domain} may not sign in to this organization")
        created, token = await run_command(request, sso.sign_in_with_sso, settings, email,
                                           request.scope.get(CLIENT_ADDRESS))
    except (oidc.SignInFailed, CommandError) as exc:
        return _landing(request, error=str(exc))
    await written(request, created)  # the token works on the page's first request
    return _landing(request, token=token)


ROUTES = [get_sso, put_sso, discover, start, callback]
