"""E-mail's pure parts: the signed tokens, the trimming of a reply, the SMTP URL, the templates' escaping and
the MIME bytes as a mail client parses them, the digest window."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from email import policy
from email.parser import BytesParser

import pytest

from commands.errors import Invalid
from commands.mail import (REPLY_ABOVE, Refused, conversation_addressed, conversation_of_token, parse_inbound,
                           read_unsubscribe_token, reply_address, reply_token, trimmed, unsubscribe_token)
from delivery import mail_templates as templates
from delivery.mail import SmtpUrlError, parse_smtp_url
from events.sealing import Sealer
from projections.mail import window
from projections.views.mail import Line, Website

SEALER = Sealer.generate()


def test_a_reply_token_names_its_conversation_and_nothing_else():
    conversation = uuid.uuid4()
    token = reply_token(SEALER, conversation)
    assert conversation_of_token(SEALER, token) == conversation
    assert token == token.lower() and len(f"reply+{token}") <= 64  # a local part, case-folding safe
    assert conversation_of_token(SEALER, token.upper()) == conversation
    for tampered in (token[:-1] + ("a" if token[-1] != "a" else "b"), token[1:], token + "a", "", "!!"):
        assert conversation_of_token(SEALER, tampered) is None
    assert conversation_of_token(Sealer.generate(), token) is None  # another deployment's key


def test_the_conversation_comes_only_from_a_valid_reply_address():
    conversation = uuid.uuid4()
    good = reply_address(SEALER, conversation, "mail.test")
    assert conversation_addressed(SEALER, ["someone@else.test", good], "mail.test") == conversation
    with pytest.raises(Refused, match="tampered or forged"):
        conversation_addressed(SEALER, [good.replace("reply+", "reply+a")], "mail.test")
    with pytest.raises(Refused):
        conversation_addressed(SEALER, [good.replace("mail.test", "evil.test")], "mail.test")
    with pytest.raises(Refused, match="not addressed"):
        conversation_addressed(SEALER, ["support@mail.test"], "mail.test")


def test_in_reply_to_and_references_are_never_read():
    conversation = uuid.uuid4()
    raw = (f"From: a@b.test\r\nTo: support@mail.test\r\nIn-Reply-To: <{conversation}@mail.test>\r\n"
           f"References: {reply_address(SEALER, conversation, 'mail.test')}\r\n\r\nHi\r\n").encode()
    with pytest.raises(Refused):
        conversation_addressed(SEALER, parse_inbound(raw).recipients, "mail.test")


def test_unsubscribe_tokens_are_signed():
    org = uuid.uuid4()
    token = unsubscribe_token(SEALER, org, "operator:abc", "mention")
    found = read_unsubscribe_token(SEALER, token)
    assert (found.org_id, found.recipient, found.kind) == (org, "operator:abc", "mention")
    forged = unsubscribe_token(Sealer.generate(), org, "operator:abc", "mention")
    for bad in (forged, token[:-2], "x.y", "nodot"):
        with pytest.raises(Invalid):
            read_unsubscribe_token(SEALER, bad)


@pytest.mark.parametrize("body", [
    "Thanks!\n\nOn Tue, 1 Dec 2026 at 10:00, Support <s@x.test> wrote:\n> earlier",
    "Thanks!\nOn Tue, 1 Dec 2026 at 10:00, a very long name\n<s@x.test> wrote:\n> earlier",
    "Thanks!\n\n-- \nAda Lovelace\nAnalytical Engines Ltd",
    "Thanks!\n\nSent from my iPhone",
    "Thanks!\n\n-----Original Message-----\nFrom: Support",
    f"Thanks!\n{REPLY_ABOVE}\nYou: hello",
    "Thanks!\n> quoted\n> more",
    "Thanks!\r\n\r\nLe mar. 1 déc. 2026, Support a écrit :\r\n> avant",
])
def test_quotes_and_signatures_are_trimmed(body):
    assert trimmed(body) == "Thanks!"


def test_a_reply_keeps_its_own_lines():
    assert trimmed("First line\n\nSecond paragraph\n") == "First line\n\nSecond paragraph"


def test_the_html_part_serves_when_there_is_no_text():
    raw = (b"From: a@b.test\r\nTo: x@y.test\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
           b"<p>Hello &amp; thanks</p><blockquote>old</blockquote><script>x</script>")
    assert trimmed(parse_inbound(raw).text) == "Hello & thanks"


def test_an_automatic_reply_is_marked():
    raw = b"From: a@b.test\r\nAuto-Submitted: auto-replied\r\nTo: x@y.test\r\n\r\nOut of office"
    assert parse_inbound(raw).automatic
    assert not parse_inbound(raw.replace(b"auto-replied", b"no")).automatic


def test_smtp_urls():
    assert parse_smtp_url("smtp://mail.test:2525") == parse_smtp_url("smtp://mail.test:2525?")
    t = parse_smtp_url("smtp://us%40er:p%3Ass@mail.test:587?starttls=1")
    assert (t.host, t.port, t.user, t.password, t.security) == ("mail.test", 587, "us@er", "p:ss", "starttls")
    assert parse_smtp_url("smtp://mail.test?tls=1").port == 465
    assert parse_smtp_url("smtp://mail.test").port == 25
    for bad in ("http://mail.test", "smtp://", "smtp://h:1?tls=1&starttls=1", "smtp://h:1?ssl=1", "smtp://h:port"):
        with pytest.raises(SmtpUrlError):
            parse_smtp_url(bad)


def test_the_digest_window_is_the_events_own():
    at = datetime(2026, 11, 26, 12, 4, 59, tzinfo=timezone.utc)
    source, due = window(at, 300)
    assert due == datetime(2026, 11, 26, 12, 5, tzinfo=timezone.utc)
    assert window(at.replace(minute=0, second=0), 300)[0] == source
    assert window(at.replace(minute=5, second=0), 300)[0] != source


def test_a_mail_is_escaped_branded_and_parses_as_two_alternatives():
    website = Website('Acme "<Shop>"', "#0f766e")
    lines = [Line("customer", None, "Where is my order?", datetime(2026, 1, 1, tzinfo=timezone.utc)),
             Line("operator", "Bo <script>", "It left <b>today</b> ✓", datetime(2026, 1, 1, tzinfo=timezone.utc))]
    rendered = templates.reply(website, lines, True, "https://p.test/api/mail/unsubscribe/t")
    assert "<b>today</b>" in rendered.text and REPLY_ABOVE in rendered.text
    assert "&lt;b&gt;today&lt;/b&gt;" in rendered.html and "<script>" not in rendered.html
    assert "#0f766e" in rendered.html and "Acme &quot;&lt;Shop&gt;&quot;" in rendered.html
    assert "#0f766e" not in templates.reply(Website("A", "red;background:url(x)"), lines, False, "u").html
    data = templates.mime([("Subject", "Réponse\r\nBcc: evil@x.test"), ("To", "v@x.test")], rendered, "b1")
    message = BytesParser(policy=policy.default).parsebytes(data)
    assert message["Subject"] == "Réponse Bcc: evil@x.test" and message["Bcc"] is None  # no header injection
    def content(kind: str) -> str:  # CRLF on the wire, as a client reads it
        return message.get_body((kind,)).get_content().replace("\r\n", "\n").rstrip("\n")

    assert content("plain") == rendered.text.rstrip("\n") and content("html") == rendered.html
    assert max(len(line) for line in data.split(b"\r\n")) <= 998
