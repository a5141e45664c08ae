"""E-mail that comes back: the signed tokens of Parley's reply-to and unsubscribe addresses, and a visitor's
reply by e-mail posted into its conversation (docs/mail.md).

The conversation a reply lands in comes only from the signed token of the address it was sent to
(`reply+<token>@<PARLEY_MAIL_DOMAIN>`), never from In-Reply-To, References, the subject or the sender: a
token is the conversation's id and a MAC under the service's key, so it cannot be made up or altered."""

from __future__ import annotations

import base64
import binascii
import hmac
import html
import re
import uuid
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses

from commands.admin import Created
from commands.errors import Invalid
from commands.messages import MAX_CONTENT, post_message
from commands.principal import Principal
from commands.streams import now
from events import types as ev
from events.ids import new_id
from events.sealing import Sealer
from events.store import EventStore, Pending

REPLY_MAC_BYTES = 10  # 80 bits: a reply-to address stays short (a local part has at most 64 characters)
UNSUBSCRIBE_MAC_BYTES = 16
REPLY_PREFIX = "reply+"
# What Parley writes above the quoted text of its own mails: a reply is cut there, whatever the client quotes.
REPLY_ABOVE = "## Reply above this line ##"
LINK_KINDS = ("invitation", "password-reset")


class Refused(Exception):
    """An inbound mail that lands nowhere; the reason is logged (never answered to the sender)."""


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode().rstrip("=").lower()


def _unb32(text: str) -> bytes:
    return base64.b32decode(text.upper() + "=" * (-len(text) % 8))


def reply_token(sealer: Sealer, conversation_id: uuid.UUID) -> str:
    return _b32(conversation_id.bytes + sealer.mac("reply", conversation_id.bytes)[:REPLY_MAC_BYTES])


def reply_address(sealer: Sealer, conversation_id: uuid.UUID, domain: str) -> str:
    return f"{REPLY_PREFIX}{reply_token(sealer, conversation_id)}@{domain}"


def conversation_of_token(sealer: Sealer, token: str) -> uuid.UUID | None:
    """The conversation a reply token was signed for; None for a token that is not one of ours."""
    try:
        raw = _unb32(token)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 16 + REPLY_MAC_BYTES or _b32(raw) != token.lower():  # one spelling per token: no spare bits
        return None
    expected = sealer.mac("reply", raw[:16])[:REPLY_MAC_BYTES]
    return uuid.UUID(bytes=raw[:16]) if hmac.compare_digest(raw[16:], expected) else None


def unsubscribe_token(sealer: Sealer, org_id: uuid.UUID, recipient: str, kind: str) -> str:
    payload = f"{org_id}|{recipient}|{kind}".encode()
    mac = sealer.mac("unsubscribe", payload)[:UNSUBSCRIBE_MAC_BYTES]
    return (base64.urlsafe_b64encode(payload).decode().rstrip("=") + "."
            + base64.urlsafe_b64encode(mac).decode().rstrip("="))


@dataclass(frozen=True)
class Unsubscription:
    org_id: uuid.UUID
    recipient: str  # operator:<id> or customer:<id>
    kind: str


def read_unsubscribe_token(sealer: Sealer, token: str) -> Unsubscription:
    """What an unsubscribe token names; Invalid for one the service did not sign."""
    try:
        encoded, mac = token.split(".")
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        given = base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))
    except (ValueError, binascii.Error):
        raise Invalid("this unsubscribe link is not valid", "token") from None
    if not hmac.compare_digest(given, sealer.mac("unsubscribe", payload)[:UNSUBSCRIBE_MAC_BYTES]):
        raise Invalid("this unsubscribe link is not valid", "token")
    org, recipient, kind = payload.decode().split("|")
    return Unsubscription(uuid.UUID(org), recipient, kind)


def unsubscribe(store: EventStore, unsubscription: Unsubscription) -> Created:
    """Records the recipient's choice (again is harmless: the outbox reads the latest)."""
    u = unsubscription
    position = store.append(Pending(new_id(), 1, ev.MailUnsubscribed(org_id=u.org_id, at=now(), recipient=u.recipient,
                                                                      kind=u.kind)))
    return Created(u.org_id, position)


def request_link_mail(store: EventStore, sealer: Sealer, org_id: uuid.UUID, link_id: uuid.UUID, kind: str,
                      email: str, url: str) -> int:
    """Asks the mail worker to send an invitation's or a password reset's link (sealed in the event: it is a
    credential). Its outbox row is keyed by the link, so it is sent once."""
    assert kind in LINK_KINDS
    return store.append(Pending(new_id(), 1, ev.LinkMailRequested(
        org_id=org_id, at=now(), link_id=link_id, kind=kind, email=email, url=sealer.seal(url))))


# --- inbound replies ---------------------------------------------------------------------------------

QUOTE_HEADER = re.compile(
    r"^(On\b.{0,300}\bwrote:|Le\b.{0,300}\ba écrit ?:|Am\b.{0,300}\bschrieb.{0,80}:|"
    r"-{2,}\s*Original Message\s*-{2,}|-{2,}\s*Forwarded message\s*-{2,}|_{10,}|From:\s.+|De\s?:\s.+)\s*$",
    re.IGNORECASE | re.DOTALL)
SIGNATURE = re.compile(r"^(--\s?|Sent from my .+|Get Outlook for .+|Envoyé de mon .+)$", re.IGNORECASE)


def trimmed(text: str) -> str:
    """The new part of a reply: cut at Parley's own marker, at the client's quote header ("On ... wrote:",
    which may wrap over two lines), at quoted lines ("> ") and at a signature delimiter ("-- ")."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[str] = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        pair = f"{stripped} {lines[index + 1].strip()}" if index + 1 < len(lines) else stripped
        if (REPLY_ABOVE in stripped or stripped.startswith(">") or SIGNATURE.match(stripped)
                or QUOTE_HEADER.match(stripped) or (stripped.startswith("On ") and QUOTE_HEADER.match(pair))):
            break
        kept.append(line.rstrip())
    return "\n".join(kept).strip()


def _text_of_html(markup: str) -> str:
    without = re.sub(r"(?is)<(script|style|blockquote)\b.*?</\1>", "", markup)
    without = re.sub(r"(?i)<br\s*/?>|</p>|</div>", "\n", without)
    return html.unescape(re.sub(r"<[^>]+>", "", without))


@dataclass
class InboundMail:
    """A parsed inbound message: who it was addressed to, its text, and its attachments (for the attachments
    feature to carry over: `attachments` is the hook, filled here and not stored yet)."""

    recipients: list[str]
    text: str
    automatic: bool  # an auto-reply (out of office, a bounce): never posted, it would answer itself
    attachments: list[tuple[str, str, bytes]] = field(default_factory=list)  # (file name, media type, bytes)


def parse_inbound(raw: bytes, envelope_recipients: list[str] | None = None) -> InboundMail:
    message: EmailMessage = BytesParser(policy=policy.default).parsebytes(raw)  # type: ignore[assignment]
    # The envelope's recipients when an SMTP server gives them; else the headers that name where it was
    # delivered. Either way only a signed token found there decides the conversation.
    recipients = list(envelope_recipients or [])
    if not recipients:
        for header in ("Delivered-To", "X-Original-To", "To", "Cc"):
            recipients += [address for _, address in getaddresses(message.get_all(header, []))]
    body = message.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        content = body.get_content()
        text = _text_of_html(content) if body.get_content_type() == "text/html" else content
    attachments = [(part.get_filename() or "attachment", part.get_content_type(), part.get_payload(decode=True) or b"")
                   for part in message.iter_attachments()]
    automatic = str(message.get("Auto-Submitted", "no")).strip().lower() != "no"
    return InboundMail(recipients, text, automatic, attachments)


def conversation_addressed(sealer: Sealer, recipients: list[str], domain: str) -> uuid.UUID:
    """The conversation of the first recipient that is a reply address of ours with a valid token."""
    seen = []
    for address in recipients:
        local, _, host = address.strip().strip("<>").rpartition("@")
        if not local.lower().startswith(REPLY_PREFIX) or (domain and host.lower() != domain.lower()):
            continue
        conversation_id = conversation_of_token(sealer, local[len(REPLY_PREFIX):])
        if conversation_id is not None:
            return conversation_id
        seen.append(address)
    raise Refused(f"no valid reply token among the recipients (tampered or forged: {seen})" if seen
                  else "not addressed to a reply address of this service")


async def receive(store: EventStore, sealer: Sealer, domain: str, raw: bytes,
                  envelope_recipients: list[str] | None = None) -> Created:
    """Posts a visitor's e-mailed reply as a `customer` message of the conversation its reply token names;
    Refused (nothing written) for a message with no valid token, an empty reply or a conversation that
    cannot take it."""
    mail = parse_inbound(raw, envelope_recipients)
    conversation_id = conversation_addressed(sealer, mail.recipients, domain)
    if mail.automatic:
        raise Refused(f"an automatic reply (Auto-Submitted) to conversation {conversation_id}")
    content = trimmed(mail.text)[:MAX_CONTENT]
    if not content:
        raise Refused(f"the reply to conversation {conversation_id} is empty once quotes and signature are trimmed")
    first = await store.first_async(conversation_id)
    created = first.event if first else None
    if not isinstance(created, ev.ConversationCreated) or created.operator_only:
        raise Refused(f"conversation {conversation_id} takes no visitor's reply")
    visitor = Principal("chat", created.org_id, conversation_id, website_id=created.website_id,
                        customer_id=created.customer_id)

    async def conversation() -> ev.ConversationCreated:
        return created

    return await post_message(store, visitor, conversation, content=content, sender="customer")

