"""Host pages for the widget and mascot tests: a customer's website on another origin than the API, with
the install snippet as docs/widget.md shows it, and helpers to read what the page and its console did."""

from __future__ import annotations

import json
import time

SNIPPET = """<script>window.$parley = {queued}; window.PARLEY_WEBSITE_ID = {website};{extra}</script>
<script async src="{base}/{script}"></script>"""


def host_page(host_pages, name: str, base: str, website_id, *, queued=(), scripts=("widget.js",), extra: str = "",
              body: str = "", head: str = "", lang: str | None = "en") -> str:
    """Serves a page that installs the given surfaces with `queued` commands pushed before load; its
    `<html lang>` is `lang` (None: no lang attribute)."""
    snippet = "".join(SNIPPET.format(queued=json.dumps(list(queued)), website=json.dumps(str(website_id)),
                                     extra=extra, base=base, script=script) for script in scripts)
    html = (f"<!doctype html><html{f' lang={lang}' if lang else ''}><head><meta charset=utf-8><title>Shop</title>{head}</head>"
            f"<body><h1>A customer's shop</h1>{body}{snippet}</body></html>")
    return host_pages.serve(f"/{name}.html", html)


class Console:
    """The page's console warnings and uncaught errors."""

    def __init__(self, page):
        self.page = page
        self.warnings: list[str] = []
        self.errors: list[str] = []
        page.on("console", lambda m: self.warnings.append(m.text) if m.type == "warning" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def wait_for_warning(self, fragment: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [w for w in self.warnings if fragment in w]
            if found:
                return found[0]
            self.page.wait_for_timeout(50)  # Playwright delivers the page's events while it is called
        raise AssertionError(f"no warning with {fragment!r}; saw {self.warnings}")


def eventually(check, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in {timeout} s; last result {result!r}")
        time.sleep(0.05)


def stored_session(page, website_id) -> dict:
    return page.evaluate(f"JSON.parse(localStorage.getItem('parley:{website_id}') || '{{}}')")
