"""The service's own SMTP listener (PARLEY_SMTP_INBOUND, off by default): visitors' replies to Parley's
e-mails, posted into their conversations (commands/mail.py `receive`).

It accepts mail only for reply addresses whose token is valid (anything else is refused at RCPT: it is no
relay and no mailbox), and takes a message only when it lands; SPF, DKIM and spam filtering are the job of
the mail server in front of it (docs/mail.md)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from aiosmtpd.smtp import SMTP, Envelope, Session

from commands.mail import Refused, conversation_addressed, receive
from events.sealing import Sealer
from events.store import EventStore

log = logging.getLogger("parley.mail")

MAX_MESSAGE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class InboundSettings:
    smtp_inbound: str  # host:port
    mail_domain: str


class ReplyHandler:
    def __init__(self, store: EventStore, sealer: Sealer, domain: str):
        self.store = store
        self.sealer = sealer
        self.domain = domain

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        try:
            conversation_addressed(self.sealer, [address], self.domain)
        except Refused as why:
            log.warning("inbound mail from %s refused at RCPT %s: %s", envelope.mail_from, address, why)
            return "550 5.1.1 no such recipient"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        try:
            created = await receive(self.store, self.sealer, self.domain, raw, list(envelope.rcpt_tos))
        except Refused as why:
            log.warning("inbound mail from %s landed nowhere: %s", envelope.mail_from, why)
            return "550 5.7.1 the reply could not be delivered to a conversation"
        log.info("inbound mail from %s posted as message %s", envelope.mail_from, created.id)
        return "250 OK"


def listen_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError("PARLEY_SMTP_INBOUND must be host:port")
    return host.strip("[]"), int(port)


async def start_listener(store: EventStore, sealer: Sealer, settings: InboundSettings) -> asyncio.Server:
    """Listens on PARLEY_SMTP_INBOUND on the running loop (the store's asynchronous connections live there)."""
    host, port = listen_address(settings.smtp_inbound)
    handler = ReplyHandler(store, sealer, settings.mail_domain)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(handler, data_size_limit=MAX_MESSAGE_BYTES, hostname=settings.mail_domain or host,
                     loop=loop), host, port)
    log.info("SMTP listener for replies on %s:%s", host, port)
    return server
