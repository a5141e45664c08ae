"""The pages `parley login` shows (sign-in and consent on the server, the answer on the CLI's loopback
listener) look like the dashboard: its colours, its card, its buttons."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_server.pages import STYLE, document
from parley.login import ANSWERED

APP_CSS = (Path(__file__).resolve().parents[2] / "web" / "app" / "app.css").read_text()


def dashboard_colour(name: str) -> str:
    return re.search(rf"--{name}: (#[0-9a-f]{{6}})", APP_CSS).group(1)


def test_the_pages_use_the_dashboard_s_colours_and_card():
    for name in ("ink", "bg", "line", "accent", "danger"):
        assert dashboard_colour(name) in STYLE, name
    page = document("Connect", "<p>hello</p>")
    assert "<main><h1>Connect</h1><p>hello</p></main>" in page and STYLE in page


def test_the_cli_s_answer_page_is_styled_as_well():
    answered = ANSWERED.decode()
    assert STYLE in answered and "close this window" in answered and "<main>" in answered
