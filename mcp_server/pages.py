"""The HTML of the pages a person sees while connecting a client (the authorization page and its
refusals): server-rendered, no script, nothing loaded from elsewhere. Apart from `consent.py` so that
the API's middleware can answer a browser's refused sign-in without importing the MCP SDK."""

from __future__ import annotations

from html import escape

CONSENT_PATH = "/oauth/consent"
HEADERS = {
    "Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
}
STYLE = """body{font:16px system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1d2433}
h1{font-size:1.3rem}label{display:block;margin:.6rem 0}input[type=email],input[type=password]{display:block;
width:100%;padding:.4rem;margin-top:.2rem}fieldset{border:1px solid #ccd;margin:1rem 0}button{padding:.5rem 1.2rem;
margin-right:.5rem}.error{color:#a01818;font-weight:600}li{margin:.3rem 0}"""


def document(title: str, body: str) -> str:
    """A whole page; `body` is HTML whose every piece of text the caller has escaped."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} - Parley</title>'
            f'<meta name="viewport" content="width=device-width"><style>{STYLE}</style></head>'
            f"<body><h1>{escape(title)}</h1>{body}</body></html>")


def refusal(title: str, message: str) -> str:
    return document(title, f'<p class="error">{escape(message)}</p>')
