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


def test_each_file_names_its_type_and_charset_once(http):
    for path, media_type in (("/app/", "text/html"), ("/app/app.css", "text/css"), ("/widget.js", "text/javascript"),
                             ("/pets/default/spritesheet.png", "image/png")):
        answer = http.get(path)
        assert answer.status_code == 200, path
        expected = f"{media_type}; charset=utf-8" if media_type.startswith("text/") else media_type
        assert answer.headers["content-type"] == expected, path


def test_a_real_browser_renders_a_page_on_another_origin(page, host_pages, server):
    url = host_pages.serve("/hello.html", "<!doctype html><title>Hello</title><p id=p>made by a test</p>")
    page.goto(url)
    assert page.text_content("#p") == "made by a test"
    assert host_pages.origin != server.base_url


def test_an_encoded_traversal_reaches_no_other_folder_of_web(http):
    # the dashboard through the pets' route (which answers with CORS and without the dashboard's CSP), and
    # another folder's files through the dashboard's or the core modules' route
    for path in ("/pets/%2e%2e%2fapp%2findex.html", "/pets/..%2fapp%2findex.html", "/app/..%2fwidget.js",
                 "/app/%2e%2e%2fparley-core.js", "/core/..%2fapp%2findex.html", "/core/..%2fmascot.js"):
        answer = http.get(path)
        assert answer.status_code == 404, path
        assert answer.headers["content-type"] == "application/problem+json", path


def html_paths(http) -> list[str]:
    """Every HTML answer the API gives: the dashboard (its page and the paths it routes in the browser),
    each operation the OpenAPI document says answers HTML, the MCP consent page and its refusal."""
    document = http.get("/schema/openapi.json").json()
    documented = [path for path, operations in document["paths"].items()
                  if any("text/html" in answer.get("content", {}) for operation in operations.values()
                         if isinstance(operation, dict) for answer in operation.get("responses", {}).values())]
    assert "/docs" in documented
    return ["/app", "/app/", "/app/index.html", "/app/inbox", "/app/conversations/nope", *documented,
            "/oauth/consent?request=nope", "/oauth/consent"]


def test_every_html_answer_forbids_framing(http):
    for path in html_paths(http):
        answer = http.get(path)
        if answer.headers["content-type"] == "application/problem+json":  # a made-up token: refused, no page
            assert 400 <= answer.status_code < 500, path
            continue
        assert answer.headers["content-type"].startswith("text/html"), path
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"], path
    # a refused consent form is a page too
    refused = http.post("/oauth/consent", data={"request": "nope"})
    assert refused.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in refused.headers["content-security-policy"]


def test_the_api_reference_runs_under_its_policy(page, server):
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(server.base_url + "/docs")
    page.wait_for_selector(".opblock", timeout=30_000)  # Swagger UI ran and drew the operations
    assert violations == []
