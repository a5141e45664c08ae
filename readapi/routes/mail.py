"""E-mail over HTTP: whether the service sends any (the dashboard says so where it matters), inbound mail
posted by a provider, and the unsubscribe link of Parley's e-mails (docs/mail.md)."""

from __future__ import annotations

import hmac
import logging
import uuid
from html import escape

import msgspec
from litestar import Request, Response, get, post
from litestar.params import FromPath

from commands import mail
from commands.admin import Created
from commands.errors import Unauthorized
from readapi.auth import OPERATOR, PUBLIC, Authenticated
from readapi.openapi import RawBody, describe
from readapi.problems import problem
from readapi.services import json_response, run_command, services, written

log = logging.getLogger("parley.mail")

INBOUND = RawBody(("message/rfc822",), "The message as received: RFC 5322, headers and body, MIME parts included.")
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                           "frame-ancestors 'none'",
                "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


class MailState(msgspec.Struct, rename="camel"):
    """Whether Parley sends e-mail (PARLEY_SMTP_URL) and takes replies to it (PARLEY_MAIL_DOMAIN)."""

    sending: bool
    replies: bool


class InboundLanded(msgspec.Struct, rename={"message_id": "messageId"}):
    message_id: uuid.UUID


def mail_configured(request: Request) -> bool:
    return bool(services(request).settings.smtp_url)


async def mail_link(request: Request, org_id: uuid.UUID, link_id: uuid.UUID, kind: str, email: str, url: str) -> bool:
    """Queues the mail of an invitation's or a reset's link; False (nothing queued) without PARLEY_SMTP_URL."""
    if not mail_configured(request):
        return False
    s = services(request)
    await written(request, Created(link_id, await run_command(request, mail.request_link_mail, s.sealer, org_id,
                                                              link_id, kind, email, url)))
    return True


@describe("Whether the service sends e-mail (PARLEY_SMTP_URL: invitations, password resets, notifications) and "
          "takes visitors' replies to it (PARLEY_MAIL_DOMAIN)", OPERATOR, answer=MailState, position=False,
          operation_id="getMailState", tag="mail")
@get("/api/mail")
async def mail_state(request: Request, principal: Authenticated) -> Response:
    settings = services(request).settings
    return json_response(MailState(bool(settings.smtp_url), bool(settings.smtp_url and settings.mail_domain)))


@describe("Inbound e-mail from a mail provider: a visitor's reply to one of Parley's e-mails, posted as a "
          "`customer` message into the conversation its reply-to address's signed token names (never one a "
          "header names). Quoted history and signatures are trimmed. Authenticated by `Authorization: Bearer "
          "<PARLEY_MAIL_INBOUND_SECRET>`; 503 while that is unset. A message with no valid token, or empty once "
          "trimmed, lands nowhere: 422, and the service logs why", PUBLIC, body=INBOUND, answer=InboundLanded,
          status=201, errors=(401, 422, 503), operation_id="receiveInboundMail", tag="mail")
@post("/api/mail/inbound", status_code=201)
async def inbound(request: Request) -> Response:
    s = services(request)
    secret = s.settings.mail_inbound_secret
    if not secret:
        return problem(503, "inbound mail over HTTP is off: PARLEY_MAIL_INBOUND_SECRET is not set")
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), secret.encode()):
        raise Unauthorized("a Bearer credential with the inbound mail secret is required")
    try:
        created = await mail.receive(s.store, s.sealer, s.settings.mail_domain, await request.body())
    except mail.Refused as why:
        log.warning("inbound mail posted over HTTP landed nowhere: %s", why)
        return problem(422, f"the message lands in no conversation: {why}")
    await written(request, created)
    return json_response(InboundLanded(created.id), created, 201)


def _page(title: str, body: str) -> Response:
    return Response(f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
                    f"<meta name=\"viewport\" content=\"width=device-width\"></head><body style=\"font-family:"
                    f"system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem\"><main><h1>{escape(title)}"
                    f"</h1>{body}</main></body></html>", media_type="text/html",
                    headers=PAGE_HEADERS)


WHAT = {"mention": "mentions", "assignment": "assignments", "conversation.new": "new conversations while the team "
        "is offline", "*": "notifications", "reply": "the team's replies"}


@describe("An e-mail's unsubscribe link, opened in a browser: a page with the button that confirms it (a link "
          "checker that follows links changes nothing)", PUBLIC, answer="An HTML page.", media_type="text/html",
          errors=(400,), operation_id="showMailUnsubscribe", tag="mail")
@get("/api/mail/unsubscribe/{token:str}")
async def show_unsubscribe(request: Request, token: FromPath[str]) -> Response:
    what = mail.read_unsubscribe_token(services(request).sealer, token)  # a bad link: 422, problem+json
    return _page("Unsubscribe", f"<p>No more e-mail about {escape(WHAT.get(what.kind, what.kind))}?</p>"
                 f"<form method=\"post\"><button type=\"submit\">Unsubscribe</button></form>")


@describe("Unsubscribe (the e-mail's link, confirmed; also a mail client's one-click `List-Unsubscribe-Post`): "
          "turns e-mail of that kind off for that recipient", PUBLIC, answer="An HTML page.", media_type="text/html",
          status=200, errors=(400,), operation_id="unsubscribeFromMail", tag="mail")
@post("/api/mail/unsubscribe/{token:str}", status_code=200)
async def unsubscribe(request: Request, token: FromPath[str]) -> Response:
    what = mail.read_unsubscribe_token(services(request).sealer, token)
    await written(request, await run_command(request, mail.unsubscribe, what))
    return _page("You are unsubscribed", f"<p>No more e-mail about {escape(WHAT.get(what.kind, what.kind))}.</p>")


ROUTES = [mail_state, inbound, show_unsubscribe, unsubscribe]
