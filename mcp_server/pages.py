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
# The dashboard's look (web/app/app.css): its colours, its card, its buttons. Inline: the page loads nothing.
STYLE = """body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2433;background:#f5f7fa;
margin:0;padding:3rem 1rem}main{max-width:28rem;margin:0 auto;background:#fff;border:1px solid #dde2ea;
border-radius:8px;padding:1.2rem 1.4rem}h1{font-size:1.35rem;margin-top:0}label{display:block;margin:.6rem 0}
input[type=email],input[type=password]{display:block;box-sizing:border-box;width:100%;font:inherit;padding:.4rem .5rem;
margin-top:.2rem;border:1px solid #dde2ea;border-radius:8px}fieldset{border:1px solid #dde2ea;border-radius:8px;
margin:1rem 0}button{font:inherit;padding:.4rem .9rem;margin-right:.5rem;border:1px solid #3056d3;border-radius:8px;
background:#3056d3;color:#fff;cursor:pointer}button[value=deny]{background:#fff;color:#3056d3}
:focus-visible{outline:3px solid #7aa2ff;outline-offset:2px}.error{color:#b42318;font-weight:600}li{margin:.3rem 0}"""


def document(title: str, body: str) -> str:
    """A whole page; `body` is HTML whose every piece of text the caller has escaped."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} - Parley</title>'
            f'<meta name="viewport" content="width=device-width"><style>{STYLE}</style></head>'
            f"<body><main><h1>{escape(title)}</h1>{body}</main></body></html>")


def refusal(title: str, message: str) -> str:
    return document(title, f'<p class="error">{escape(message)}</p>')
