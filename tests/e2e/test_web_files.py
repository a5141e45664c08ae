"""The browser code is served as the repository's own files, and a real browser runs in the suite."""

from __future__ import annotations

from tests.support.browser import browser, host_pages, page  # noqa: F401 - fixtures


def test_the_root_redirects_to_the_dashboard(http):
    answer = http.get("/", follow_redirects=False)
    assert answer.status_code in (302, 307) and answer.headers["location"] == "/app/"


def test_a_file_outside_web_is_never_served(http):
    for path in ("/pets/../../pyproject.toml", "/pets/%2e%2e/%2e%2e/pyproject.toml", "/app/../../README.md",
                 "/pets/default/nothing.png"):
        answer = http.get(path)
        assert answer.status_code == 404, path
        assert "[project]" not in answer.text


def test_a_real_browser_renders_a_page_on_another_origin(page, host_pages, server):
    url = host_pages.serve("/hello.html", "<!doctype html><title>Hello</title><p id=p>made by a test</p>")
    page.goto(url)
    assert page.text_content("#p") == "made by a test"
    assert host_pages.origin != server.base_url
