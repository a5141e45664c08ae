"""Parley's e-mails, in plain text and in HTML: the website's name and brand colour, the content escaped
(every value a visitor or an operator wrote is text, never markup), an unsubscribe link where the mail is a
notification."""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass
from datetime import datetime
from email.header import Header
from html import escape

from commands.mail import REPLY_ABOVE
from projections.views.mail import DigestEntry, Line, Website

DEFAULT_COLOR = "#2563eb"
COLOR = re.compile(r"^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$")
EXCERPT = 200  # characters of a visitor's message in an operator's digest


@dataclass(frozen=True)
class Rendered:
    subject: str
    text: str
    html: str


def _color(website: Website) -> str:
    return website.brand_color if website.brand_color and COLOR.match(website.brand_color) else DEFAULT_COLOR


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[:EXCERPT - 1] + "…"


def _page(website: Website, body_html: str, unsubscribe: str | None) -> str:
    color = _color(website)
    footer = (f'<p style="color:#6b7280;font-size:12px">Don\'t want these e-mails? '
              f'<a href="{escape(unsubscribe)}" style="color:#6b7280">Unsubscribe</a>.</p>' if unsubscribe else "")
    return (f'<!doctype html><html><body style="margin:0;font-family:system-ui,sans-serif;color:#111827">'
            f'<div style="background:{color};color:#ffffff;padding:12px 20px;font-weight:600">'
            f'{escape(website.name)}</div><div style="padding:20px;max-width:640px">{body_html}{footer}</div>'
            f'</body></html>')


def _text_footer(unsubscribe: str | None) -> str:
    return f"\n\n--\nDon't want these e-mails? Unsubscribe: {unsubscribe}\n" if unsubscribe else "\n"


def _button(website: Website, url: str, label: str) -> str:
    return (f'<p><a href="{escape(url)}" style="display:inline-block;background:{_color(website)};color:#ffffff;'
            f'padding:10px 16px;border-radius:6px;text-decoration:none">{escape(label)}</a></p>')


def digest(website: Website, entries: list[DigestEntry], dashboard: str, unsubscribe: str) -> Rendered:
    """An operator's digest of a window: a line per conversation (mentions, visitors' messages while the
    team was offline)."""
    count = len(entries)
    subject = (f"[{website.name}] {count} conversation{'s' if count != 1 else ''} need"
               f"{'s' if count == 1 else ''} you")
    text_lines, html_items = [], []
    for entry in entries:
        who = entry.visitor or "A visitor"
        what = []
        if entry.messages:
            what.append(f"{entry.messages} new message{'s' if entry.messages != 1 else ''} while the team was offline")
        if "mention" in entry.kinds:
            what.append("you were mentioned")
        if "assignment" in entry.kinds:
            what.append("assigned to you")
        link = f"{dashboard}/app/inbox/{entry.conversation_id}"
        said = f'\n  "{_excerpt(entry.last_visitor_text)}"' if entry.last_visitor_text and entry.messages else ""
        text_lines.append(f"- {who} on {entry.website}: {', '.join(what)}{said}\n  {link}")
        quote = (f'<blockquote style="margin:4px 0;color:#374151">{escape(_excerpt(entry.last_visitor_text))}'
                 f'</blockquote>' if said else "")
        html_items.append(f'<li style="margin-bottom:12px"><strong>{escape(who)}</strong> on {escape(entry.website)}: '
                          f'{escape(", ".join(what))}{quote}<a href="{escape(link)}">Open the conversation</a></li>')
    text = f"{subject}\n\n" + "\n".join(text_lines) + _text_footer(unsubscribe)
    body = f"<h1 style=\"font-size:18px\">{escape(subject)}</h1><ul style=\"padding-left:18px\">{''.join(html_items)}</ul>"
    return Rendered(subject, text, _page(website, body, unsubscribe))


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def reply(website: Website, lines: list[Line], reply_by_mail: bool, unsubscribe: str) -> Rendered:
    """The team's reply to a visitor who left: the transcript since their last visit (never a note: the
    caller's query excludes them)."""
    subject = f"New reply from {website.name}"
    head = f"{REPLY_ABOVE}\nReply to this e-mail to answer.\n\n" if reply_by_mail else ""
    text_lines, html_lines = [], []
    for line in lines:
        who = "You" if line.sender == "customer" else (line.author or website.name)
        text_lines.append(f"{who} ({_when(line.at)}):\n{line.content}\n")
        html_lines.append(f'<div style="margin:0 0 14px"><div style="color:#6b7280;font-size:12px">{escape(who)} · '
                          f'{escape(_when(line.at))}</div><div style="white-space:pre-wrap">{escape(line.content)}</div>'
                          f'</div>')
    text = head + "\n".join(text_lines) + _text_footer(unsubscribe)
    marker = (f'<p style="color:#9ca3af;font-size:12px">{escape(REPLY_ABOVE)}<br>Reply to this e-mail to answer.</p>'
              if reply_by_mail else "")
    return Rendered(subject, text, _page(website, marker + "".join(html_lines), unsubscribe))


def link(kind: str, organization: str, url: str) -> Rendered:
    """An invitation to join an organization, or a password reset link (both single use)."""
    parley = Website("Parley", None)
    if kind == "invitation":
        subject, intro, label = (f"You're invited to join {organization} on Parley",
                                 f"You are invited to join {organization} on Parley. The link works once, for 7 days.",
                                 "Accept the invitation")
    else:
        subject, intro, label = ("Reset your Parley password",
                                 "Someone (we hope you) asked to reset your Parley password. The link works once, "
                                 "for 24 hours; if it was not you, ignore this e-mail.", "Set a new password")
    text = f"{intro}\n\n{label}: {url}\n"
    return Rendered(subject, text, _page(parley, f"<p>{escape(intro)}</p>{_button(parley, url, label)}", None))


def _header(name: str, value: str) -> bytes:
    """One header line; a value is never allowed to break the header block (no CR or LF in it), and any
    non-ASCII text is RFC 2047 encoded (From's display name is encoded by `formataddr` already)."""
    flat = " ".join(value.split())
    if not flat.isascii():
        flat = Header(flat, "utf-8", header_name=name).encode(linesep="\r\n")
    return f"{name}: {flat}\r\n".encode("ascii")


def _quoted_printable(text: str) -> bytes:
    encoded = binascii.b2a_qp(text.replace("\r\n", "\n").encode("utf-8"), istext=True)
    return encoded.replace(b"\n", b"\r\n")


def mime(headers: list[tuple[str, str]], rendered: Rendered, boundary_seed: str) -> bytes:
    """The message as sent: the headers, then the text and the HTML as alternatives, quoted-printable.
    Built directly rather than with the `email` package, whose header parsing and generator cost several
    milliseconds per message (bench/notifications.py)."""
    boundary = f"=_parley_{boundary_seed}"
    head = b"".join(_header(name, value) for name, value in headers)
    part = "--{b}\r\nContent-Type: text/{kind}; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
    return (head + f"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"{boundary}\"\r\n\r\n"
            .encode() + part.format(b=boundary, kind="plain").encode() + _quoted_printable(rendered.text) + b"\r\n"
            + part.format(b=boundary, kind="html").encode() + _quoted_printable(rendered.html) + b"\r\n"
            + f"--{boundary}--\r\n".encode())
