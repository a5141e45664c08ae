"""The mail worker: sends what the mail outbox (projections/mail.py) holds, over SMTP (PARLEY_SMTP_URL).

One worker sends at a time across processes (the `mail-sender` lease, events/leadership.py), and each row
is claimed with a lease of its own as well (projections/views/mail.py), so a frozen leader that wakes up
after its replacement took over sends nothing that was claimed since. Exactly once per recipient, kind and
source, with SMTP's one gap handled as at most once: a message's data goes to the server up to its final
"." only; then the row is marked `sending` (under the claim's token); then the "." goes, and the server's
250 marks it `sent`. A worker killed before that mark leaves an incomplete SMTP transaction, which the
server discards, and the row is sent again later; one killed between the mark and the mark `sent` (the
server's answer travelling back: about a round trip) leaves a row the next worker finds `sending` past its
lease, and marks `uncertain`, never sending it again: perhaps delivered, never twice (docs/mail.md). Each
message's Message-ID is its row's id, so even a copy made by a relay further on is recognisable.

Nothing is sent without PARLEY_SMTP_URL: the worker is not started, and the rows wait."""

from __future__ import annotations

import asyncio
import logging
import re
import smtplib
import socket
import ssl
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from email.utils import formataddr, formatdate
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
from psycopg_pool import AsyncConnectionPool

from commands.mail import reply_address, unsubscribe_token
from delivery import mail_templates as templates
from events.leadership import DEFAULT_LEASE_SECONDS, Fence, Lease
from events.sealing import Sealer
from events.supervision import keep_running, work_when_woken
from projections.mail import WAKE_CHANNEL, MailProjection
from projections.notifications import NotificationsProjection
from projections.runner import ensure_tables
from projections.views import mail as outbox
from projections.views.mail import Claimed
from projections.views.notifications import preferences

log = logging.getLogger("parley.mail")

SMTP_TIMEOUT_SECONDS = 30.0
LEASE_SECONDS = 2 * SMTP_TIMEOUT_SECONDS + 10  # a row's claim outlives the longest a send can take
CLAIM_BATCH = 100
MAX_WAIT_SECONDS = 1.0  # a poll now and then finds rows whose lease ran out in a dead worker
RETRY_BASE_SECONDS = 30.0
RETRY_CAP_SECONDS = 3600.0
MAX_ATTEMPTS = 12  # about a day of retries for a server that keeps answering 4xx or cannot be reached


class SmtpUrlError(ValueError):
    """PARLEY_SMTP_URL is not smtp://[user:password@]host:port[?starttls=1|tls=1]."""


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    user: str | None
    password: str | None
    security: str  # none, starttls, tls


def parse_smtp_url(url: str) -> SmtpTarget:
    parts = urlsplit(url)
    if parts.scheme != "smtp" or not parts.hostname:
        raise SmtpUrlError("PARLEY_SMTP_URL must be smtp://[user:password@]host:port[?starttls=1|tls=1]")
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    unknown = set(query) - {"starttls", "tls"}
    if unknown:
        raise SmtpUrlError(f"PARLEY_SMTP_URL: unknown option {', '.join(sorted(unknown))} (starttls=1 or tls=1)")
    starttls, tls = query.get("starttls") == "1", query.get("tls") == "1"
    if starttls and tls:
        raise SmtpUrlError("PARLEY_SMTP_URL: starttls=1 or tls=1, not both")
    try:
        port = parts.port or (465 if tls else 587 if starttls else 25)
    except ValueError:
        raise SmtpUrlError("PARLEY_SMTP_URL: the port is not a number") from None
    return SmtpTarget(parts.hostname, port, unquote(parts.username) if parts.username else None,
                      unquote(parts.password) if parts.password else None,
                      "tls" if tls else "starttls" if starttls else "none")


@dataclass(frozen=True)
class MailSettings:
    """What the mail worker is told by the composition root (PARLEY_SMTP_URL, PARLEY_MAIL_*, docs/configuration.md)."""

    smtp_url: str
    mail_from: str
    mail_domain: str
    base_url: str  # where the links in a mail point: PARLEY_PUBLIC_URL, else the address the API listens on

    @property
    def sender(self) -> str:
        if self.mail_from:
            return self.mail_from
        return f"parley@{self.mail_domain or parse_smtp_url(self.smtp_url).host}"


class SmtpRefused(Exception):
    def __init__(self, code: int, reply: str):
        super().__init__(f"{code} {reply}")
        self.code = code
        self.permanent = 500 <= code < 600


DOT_STUFF = re.compile(rb"(?m)^\.")


class SmtpConnection:
    """One kept SMTP connection, used from one thread: a message is sent in two steps, everything up to the
    end of its data (`begin`), then the end, which makes the server take it (`commit`)."""

    def __init__(self, target: SmtpTarget, context: ssl.SSLContext | None = None):
        self.target = target
        self.context = context or ssl.create_default_context()
        self.smtp: smtplib.SMTP | None = None
        self.clean = True  # no transaction begun and left unfinished on this connection

    def _connect(self) -> smtplib.SMTP:
        t = self.target
        if t.security == "tls":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(t.host, t.port, timeout=SMTP_TIMEOUT_SECONDS, context=self.context)
        else:
            smtp = smtplib.SMTP(t.host, t.port, timeout=SMTP_TIMEOUT_SECONDS)
        # the final "." follows the data as a write of its own: without this, Nagle's algorithm holds it until
        # the server acknowledges the data, which a delayed ACK makes 40 ms per message
        smtp.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        smtp.ehlo()
        if t.security == "starttls":
            smtp.starttls(context=self.context)
            smtp.ehlo()
        if t.user:
            smtp.login(t.user, t.password or "")
        return smtp

    def begin(self, sender: str, recipient: str, data: bytes) -> None:
        """Everything but the final "." of the message's data; SmtpRefused when the server refuses a step."""
        if self.smtp is not None and not self.clean:  # a transaction left half-way (refused): forget it
            try:
                self.smtp.rset()
            except (smtplib.SMTPException, OSError):
                self.close()
        reused = self.smtp is not None
        if self.smtp is None:
            self.smtp = self._connect()
        self.clean = False
        try:
            code, reply = self.smtp.mail(sender)
        except (smtplib.SMTPServerDisconnected, OSError):
            if not reused:
                raise
            self.close()  # the server closed the idle connection: a new one
            self.smtp = self._connect()
            self.clean = False
            code, reply = self.smtp.mail(sender)
        if code == 250:
            code, reply = self.smtp.rcpt(recipient)
        if code not in (250, 251):
            raise SmtpRefused(code, reply.decode(errors="replace"))
        code, reply = self.smtp.docmd("DATA")
        if code != 354:
            raise SmtpRefused(code, reply.decode(errors="replace"))
        stuffed = DOT_STUFF.sub(b"..", data)
        self.smtp.send(stuffed if stuffed.endswith(b"\r\n") else stuffed + b"\r\n")

    def commit(self) -> None:
        """The final ".": the server takes the message (250) or says why not (SmtpRefused)."""
        assert self.smtp is not None
        self.smtp.send(b".\r\n")
        code, reply = self.smtp.getreply()
        self.clean = True  # the transaction is over, taken or not: the next one starts afresh
        if code != 250:
            raise SmtpRefused(code, reply.decode(errors="replace"))

    def close(self) -> None:
        """Drops the connection (a transaction begun and not committed is discarded by the server)."""
        smtp, self.smtp, self.clean = self.smtp, None, True
        if smtp is not None:
            try:
                smtp.close()
            except OSError:
                pass


@dataclass(frozen=True)
class Outgoing:
    to: str
    data: bytes  # the whole message, CRLF line ends


class Skip(Exception):
    """A row with nothing to send (the visitor is on the page, the recipient unsubscribed, has no address)."""


def retry_delay(attempts: int) -> float:
    return min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2 ** max(0, attempts - 1))


class Mailer:
    def __init__(self, database_url: str, settings: MailSettings, sealer: Sealer, digest_seconds: float,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS, context: ssl.SSLContext | None = None,
                 row_lease_seconds: float = LEASE_SECONDS):
        self.database_url = database_url
        # how long a claimed row stays this worker's: a row whose worker died is claimed again after it (this
        # decides when such a row is retried, never whether one is sent twice: the `sending` mark checks the claim)
        self.row_lease_seconds = row_lease_seconds
        self.settings = settings
        self.sealer = sealer
        self.digest_seconds = digest_seconds
        self.connection = SmtpConnection(parse_smtp_url(settings.smtp_url), context)
        self.smtp_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parley-smtp")
        self.lease = Lease(database_url, "mail-sender", lease_seconds)
        self.wake = asyncio.Event()
        self.sent: list[uuid.UUID] = []  # accepted by the server, not yet marked sent

    async def run(self) -> None:
        try:
            await keep_running("mail sender", lambda: self.lease.lead(self._send_while_leading), log)
        finally:
            self.connection.close()

    async def _smtp(self, step, *args) -> None:
        await asyncio.get_running_loop().run_in_executor(self.smtp_thread, step, *args)

    async def _send_while_leading(self, _: Fence) -> None:
        async with AsyncConnectionPool(self.database_url, min_size=1, max_size=2, open=False,
                                       kwargs={"autocommit": True}) as pool:
            async with pool.connection() as conn:
                # the preferences the digests follow are the notifications read model's
                await ensure_tables(conn, MailProjection(self.digest_seconds), NotificationsProjection())
            await work_when_woken(self.database_url, WAKE_CHANNEL, self.wake, lambda: self._send_due(pool))

    async def _send_due(self, pool: AsyncConnectionPool) -> float:
        """Sends a batch of the due mail; the seconds until the next is due (0: a full batch, more may wait)."""
        async with pool.connection() as conn:
            for row_id, in await (await conn.execute(outbox.UNCERTAIN)).fetchall():
                log.warning("mail %s: its worker stopped while the SMTP server took it; marked "
                            "uncertain, not sent again", row_id)
            claimed, wait = await outbox.claim(conn, CLAIM_BATCH, self.row_lease_seconds)
            for row in claimed:
                await self._send(conn, row)
            await self._mark_sent(conn)
        return 0 if len(claimed) == CLAIM_BATCH else min(MAX_WAIT_SECONDS, max(0.0, wait or MAX_WAIT_SECONDS))

    async def _mark_sent(self, conn: psycopg.AsyncConnection) -> None:
        if self.sent:
            await conn.execute(outbox.SENT, (self.sent,))
            self.sent = []

    async def _send(self, conn: psycopg.AsyncConnection, row: Claimed) -> None:
        try:
            outgoing = await self._compose(conn, row)
        except Skip as why:
            await conn.execute(outbox.ENDED, ("skipped", str(why), row.id, row.attempts))
            return
        try:
            await self._smtp(self.connection.begin, self.settings.sender, outgoing.to, outgoing.data)
        except (SmtpRefused, smtplib.SMTPException, OSError) as exc:
            self.connection.close()
            await self._failed(conn, row, exc)
            return
        # one statement marks this row `sending` and the rows the server took since the last one `sent`
        marked = await conn.execute(outbox.SENDING, {"lease": self.row_lease_seconds, "id": row.id,
                                                     "attempts": row.attempts, "sent": self.sent})
        self.sent = []
        if await marked.fetchone() is None:
            self.connection.close()  # claimed by another worker since: its transaction is dropped unsent
            return
        try:
            await self._smtp(self.connection.commit)
        except SmtpRefused as exc:  # the server answered: the message was not taken
            await self._failed(conn, row, exc)
            return
        except (smtplib.SMTPException, OSError) as exc:
            self.connection.close()
            log.warning("mail %s: no answer after its data (%s); marked uncertain, not sent again", row.id, exc)
            await conn.execute(outbox.ENDED, ("uncertain", f"no answer after the data: {exc}", row.id, row.attempts))
            return
        self.sent.append(row.id)

    async def _failed(self, conn: psycopg.AsyncConnection, row: Claimed, exc: Exception) -> None:
        permanent = isinstance(exc, SmtpRefused) and exc.permanent
        if permanent or row.attempts >= MAX_ATTEMPTS:
            log.warning("mail %s to %s failed: %s", row.id, row.recipient, exc)
            await conn.execute(outbox.ENDED, ("failed", str(exc)[:500], row.id, row.attempts))
        else:
            await conn.execute(outbox.RETRY, (retry_delay(row.attempts), str(exc)[:500], row.id, row.attempts))

    async def _compose(self, conn: psycopg.AsyncConnection, row: Claimed) -> Outgoing:
        kind, _, recipient_id = row.recipient.partition(":")
        if row.kind == "digest":
            return await self._digest(conn, row, uuid.UUID(recipient_id))
        if row.kind == "reply":
            return await self._reply(conn, row, uuid.UUID(recipient_id))
        organization = await outbox.organization_name(conn, row.org_id)
        rendered = templates.link(row.kind, organization, self.sealer.open(row.payload or ""))
        return Outgoing(recipient_id, self._message(row, rendered, recipient_id, "Parley"))

    def _unsubscribe(self, row: Claimed, kind: str) -> str:
        token = unsubscribe_token(self.sealer, row.org_id, row.recipient, kind)
        return f"{self.settings.base_url.rstrip('/')}/api/mail/unsubscribe/{token}"

    async def _digest(self, conn: psycopg.AsyncConnection, row: Claimed, operator_id: uuid.UUID) -> Outgoing:
        person = await outbox.operator(conn, operator_id)
        if not person.email:
            raise Skip("the operator has no e-mail address")
        chosen = await preferences(conn, row.org_id, operator_id)  # the operator's e-mail channel, by kind
        entries = [replace(entry, kinds=kinds) for entry in await outbox.digest(conn, row.recipient, row.source)
                   if (kinds := [kind for kind in entry.kinds if chosen[kind].email])]
        if not entries:
            raise Skip("unsubscribed from everything in this digest, or e-mail turned off for its kinds")
        kinds = {kind for entry in entries for kind in entry.kinds}
        unsubscribe = self._unsubscribe(row, kinds.pop() if len(kinds) == 1 else "*")
        website = await outbox.website(conn, row.website_id)
        rendered = templates.digest(website, entries, self.settings.base_url.rstrip("/"), unsubscribe)
        return Outgoing(person.email, self._message(row, rendered, person.email, website.name, unsubscribe))

    async def _reply(self, conn: psycopg.AsyncConnection, row: Claimed, customer_id: uuid.UUID) -> Outgoing:
        if await outbox.opted_out(conn, row.recipient, "reply"):
            raise Skip("the visitor unsubscribed")
        person = await outbox.customer(conn, customer_id)
        if not person.email:
            raise Skip("the visitor has no e-mail address")
        if await outbox.visitor_present(conn, customer_id):
            raise Skip("the visitor is on the page")
        assert row.conversation_id is not None
        lines = await outbox.transcript(conn, row.org_id, row.conversation_id)
        if not any(line.sender != "customer" for line in lines):
            raise Skip("nothing the visitor has not seen")
        website = await outbox.website(conn, row.website_id)
        domain = self.settings.mail_domain
        unsubscribe = self._unsubscribe(row, "reply")
        rendered = templates.reply(website, lines, bool(domain), unsubscribe)
        reply_to = reply_address(self.sealer, row.conversation_id, domain) if domain else None
        return Outgoing(person.email, self._message(row, rendered, person.email, website.name, unsubscribe, reply_to))

    def _message(self, row: Claimed, rendered: templates.Rendered, to: str, sender_name: str,
                 unsubscribe: str | None = None, reply_to: str | None = None) -> bytes:
        domain = self.settings.sender.rpartition("@")[2]
        headers = [("Subject", rendered.subject), ("From", formataddr((sender_name, self.settings.sender), "utf-8")),
                   ("To", to), ("Message-ID", f"<{row.id}@{domain}>"),  # the row's: a copy further on is recognisable
                   ("Date", formatdate(usegmt=True)), ("Auto-Submitted", "auto-generated")]
        if reply_to:
            headers.append(("Reply-To", reply_to))
        if unsubscribe:
            headers += [("List-Unsubscribe", f"<{unsubscribe}>"),
                        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")]
        return templates.mime(headers, rendered, row.id.hex)
