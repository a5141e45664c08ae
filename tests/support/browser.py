"""A real browser for the browser tests: Debian's Chromium, driven by Playwright for Python.

Playwright never downloads a browser here: it launches `/usr/bin/chromium`. When Chromium is missing, the
fixture installs Debian's package (as root can); when it still cannot start a browser, the test FAILS with
the reason, it never skips, so a green run always means the browser tests ran.

Fixtures (import them in a test module with `from tests.support.browser import browser, host_pages  # noqa: F401`,
or use them anywhere once conftest imports this module):
- `browser`: one headless Chromium per test module (see the fixture for why not per session).
- `page`: a fresh context and page per test (closed after it).
- `host_pages`: a web server on another origin than the API, serving HTML a test gives it, as a customer's
  website serves the widget snippet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Flags for a closed network: without the background-networking ones Chromium keeps dialling Google's
# hosts, and every refused connection costs time.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def ensure_debian_package(program: Path, package: str) -> Path:
    """`program`, with its Debian package installed first when it is missing and this process may install
    it: the suite needs it on a fresh machine, and fails (never skips) when it cannot have it."""
    if program.exists():
        return program
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail(f"{program} is missing and this user cannot install it: run "
                    f"`apt-get install {package}` as root", pytrace=False)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", package]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            pytest.fail(f"installing {package} failed ({' '.join(command)}):\n{done.stderr[-2000:]}", pytrace=False)
    if not program.exists():
        pytest.fail(f"apt-get installed {package} but {program} is still missing", pytrace=False)
    return program


def ensure_chromium() -> Path:
    """Debian's Chromium."""
    return ensure_debian_package(CHROMIUM, "chromium")


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module, stopped when the module ends: Playwright's sync API leaves its event
    loop marked as running in the main thread while it is started, so a later test's `asyncio.run` would
    fail. Modules run one after another, so two Playwrights never run at once."""
    executable = ensure_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.fail(f"Playwright for Python is not installed ({exc}); it is in the `test` extra", pytrace=False)
    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=str(executable), headless=True, args=CHROMIUM_ARGS)
        except Exception as exc:  # noqa: BLE001 - any launch failure is the test's failure, with its reason
            pytest.fail(f"Chromium did not start: {exc}", pytrace=False)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def screenshot(page, name: str) -> Path:
    """Saves a screenshot for the docs (docs/screenshots/NAME.png) and returns its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


class HostPages:
    """A customer's website on its own origin: `serve(path, html)` then `url(path)`."""

    def __init__(self) -> None:
        pages: dict[str, bytes] = {}
        self.pages = pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                body = pages.get(self.path.split("?", 1)[0])
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def serve(self, path: str, html: str) -> str:
        self.pages[path] = html.encode()
        return self.url(path)

    def url(self, path: str) -> str:
        return self.origin + path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="session")
def host_pages() -> Iterator[HostPages]:
    pages = HostPages()
    yield pages
    pages.close()
