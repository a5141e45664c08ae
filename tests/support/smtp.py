"""A real SMTP server on the loopback (aiosmtpd) that keeps every message it is sent: what Parley mails, as
a mail server would receive it."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Callable

from aiosmtpd.controller import Controller


@dataclass(frozen=True)
class Received:
    sender: str
    recipients: list[str]
    raw: bytes

    @property
    def message(self) -> EmailMessage:
        return BytesParser(policy=policy.default).parsebytes(self.raw)  # type: ignore[return-value]

    def part(self, subtype: str) -> str:
        body = self.message.get_body(preferencelist=(subtype,))
        assert body is not None, f"no text/{subtype} part"
        return body.get_content()


class _Keeper:
    def __init__(self, inbox: "SmtpInbox"):
        self.inbox = inbox

    async def handle_DATA(self, server, session, envelope) -> str:
        self.inbox.add(Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SmtpInbox:
    """`with SmtpInbox() as inbox:` a server on 127.0.0.1:`inbox.port`; `inbox.url` is its PARLEY_SMTP_URL."""

    def __init__(self) -> None:
        self.messages: list[Received] = []
        self.lock = threading.Condition()
        self.port = free_port()
        self.controller = Controller(_Keeper(self), hostname="127.0.0.1", port=self.port, ready_timeout=10)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def add(self, received: Received) -> None:
        with self.lock:
            self.messages.append(received)
            self.lock.notify_all()

    def to(self, address: str) -> list[Received]:
        with self.lock:
            return [m for m in self.messages if address in m.recipients]

    def wait_for(self, found: Callable[[list[Received]], bool], timeout: float = 30) -> list[Received]:
        """The messages, once `found` says they are what is awaited; AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while not found(self.messages):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"not received in {timeout} s; received: "
                                         f"{[(m.recipients, m.message['Subject']) for m in self.messages]}")
                self.lock.wait(left)
            return list(self.messages)

    def __enter__(self) -> "SmtpInbox":
        self.controller.start()
        return self

    def __exit__(self, *_) -> None:
        self.controller.stop()


def mail_env(inbox: SmtpInbox, **extra: str) -> dict[str, str]:
    """The settings of a server that mails `inbox` and listens for replies on a port of its own (the
    digest window short, for the tests to see several)."""
    return {"PARLEY_SMTP_URL": inbox.url, "PARLEY_MAIL_FROM": "support@parley.test", "PARLEY_MAIL_DOMAIN": "mail.test",
            "PARLEY_NOTIFY_DIGEST_SECONDS": "2", "PARLEY_SMTP_INBOUND": f"127.0.0.1:{free_port()}",
            "PARLEY_MAIL_INBOUND_SECRET": "inbound-secret", **extra}
