"""The chat widget in a real Chromium, on a host page served from another origin than the API: the command
queue before and after load, identity, the session across reloads, metadata and context, live replies,
resuming after a server restart, XSS, hostile host CSS, keyboard use and the size budgets."""

from __future__ import annotations

import asyncio
import gzip
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from tests.browser import browser, host_pages, page, screenshot  # noqa: F401 - fixtures
from tests.conftest import make_server, make_tenant
from tests.visitors import sign, start_session
from tests.widget_pages import Console, eventually, host_page, stored_session

from projections.chat import visitor_context

WEB = Path(__file__).resolve().parents[1] / "web"


def reply(http, tenant, conversation_id, content):
    response = http.post("/api/messages", headers=tenant.operator,
                         json={"conversationId": conversation_id, "content": content, "from": "operator"})
    assert response.status_code == 200, response.text
    return response.json()


def conversations_of(http, tenant):
    return http.get("/api/conversations", headers=tenant.operator,
                    params={"websiteId": str(tenant.website_id)}).json()


def the_conversation(http, tenant):
    found = eventually(lambda: conversations_of(http, tenant))
    assert len(found) == 1
    return found[0]


def transcript_texts(page):
    return page.locator("[data-parley=widget] .log .text").all_text_contents()


def wait_text(page, text):
    eventually(lambda: text in transcript_texts(page))


def test_commands_before_and_after_load_live_replies_and_unread(page, host_pages, server, http):
    tenant = make_tenant(server)
    console = Console(page)
    page.goto(host_page(host_pages, "queue", server.base_url, tenant.website_id, queued=[
        ["setUserNickname", "Ada"], ["setUserPhone", "+44 20 7946 0000"], ["setMetadata", "plan", "pro"],
        ["sendMessage", "Hello from the page"], ["openChat"], ["noSuchCommand", 1], ["setUserNickname"],
        ["setBrandColor", "url(javascript:alert(1))"], ["setBrandColor", "rgb(200, 30, 90)"]]))
    wait_text(page, "Hello from the page")
    assert page.get_by_role("dialog", name="Chat with us").is_visible()
    console.wait_for_warning('unknown command "noSuchCommand"')
    console.wait_for_warning("setUserNickname expects (name: string)")
    console.wait_for_warning("is not a CSS color")
    assert page.locator("[data-parley=widget] .launcher").evaluate(
        "e => getComputedStyle(e).backgroundColor") == "rgb(200, 30, 90)"
    conversation = the_conversation(http, tenant)
    record = http.get(f"/api/conversations/{conversation['_id']}", headers=tenant.operator).json()
    assert record["metadata"] == {"plan": "pro"}
    customer = http.get(f"/api/customers/{conversation['customerId']}", headers=tenant.operator).json()
    assert (customer["nickname"], customer["phone"]) == ("Ada", "+44 20 7946 0000")

    # after load, push runs at once
    page.evaluate("window.$parley.push(['sendMessage', 'Second, after load'])")
    wait_text(page, "Second, after load")
    reply(http, tenant, conversation["_id"], "Hi Ada, how can we help?")
    wait_text(page, "Hi Ada, how can we help?")
    screenshot(page, "widget-open")
    page.evaluate("window.$parley.push(['closeChat'])")
    eventually(lambda: not page.get_by_role("dialog").is_visible())
    reply(http, tenant, conversation["_id"], "Are you still there?")
    launcher = page.locator("[data-parley=widget] .launcher")
    eventually(lambda: launcher.locator(".badge").text_content() == "1")
    assert launcher.get_attribute("aria-label") == "Open chat, 1 unread"
    page.evaluate("window.$parley.push(['hideChat'])")
    eventually(lambda: not launcher.is_visible())
    page.evaluate("window.$parley.push(['showChat'], ['openChat'])")
    eventually(lambda: page.get_by_role("dialog").is_visible())
    assert not launcher.locator(".badge").is_visible()
    assert console.errors == []
    # the widget adds no global but $parley and the configuration
    added = page.evaluate("""() => { const f = document.createElement('iframe'); document.body.append(f);
        const clean = new Set(Object.getOwnPropertyNames(f.contentWindow)); f.remove();
        return Object.getOwnPropertyNames(window).filter(n => !clean.has(n)); }""")
    assert set(added) <= {"$parley", "PARLEY_WEBSITE_ID"}, added


def test_identity_right_and_wrong_signatures_and_the_session_across_reloads(page, host_pages, server, http):
    tenant = make_tenant(server)
    user = f"user-{uuid.uuid4().hex[:6]}"
    other_device = start_session(http, tenant.website_id, userId=user, signature=sign(tenant.identity_secret, user))
    conversation_id = http.post("/api/chat/conversations", headers=other_device.headers).json()["_id"]
    http.post("/api/chat/messages", headers=other_device.headers,
              json={"conversationId": conversation_id, "content": "Written on my phone"})
    console = Console(page)

    page.goto(host_page(host_pages, "wrong", server.base_url, tenant.website_id, queued=[
        ["setUserId", user, sign("not the secret", user)], ["openChat"]]))
    console.wait_for_warning("the signature does not match")
    eventually(lambda: stored_session(page, tenant.website_id).get("token"))
    assert "Written on my phone" not in page.locator("[data-parley=widget]").inner_text()
    assert stored_session(page, tenant.website_id).get("userId") is None

    signed = host_page(host_pages, "signed", server.base_url, tenant.website_id, queued=[
        ["setUserId", user, sign(tenant.identity_secret, user)], ["openChat"]])
    page.goto(signed)
    wait_text(page, "Written on my phone")
    token = stored_session(page, tenant.website_id)["token"]
    assert stored_session(page, tenant.website_id)["userId"] == user
    page.evaluate("window.$parley.push(['sendMessage', 'And from the browser'])")
    wait_text(page, "And from the browser")
    page.reload()
    wait_text(page, "And from the browser")
    assert stored_session(page, tenant.website_id)["token"] == token
    # another user id drops the session: nothing of the first user stays on screen
    page.goto(host_page(host_pages, "switched", server.base_url, tenant.website_id, queued=[
        ["setUserId", "someone-else", sign(tenant.identity_secret, "someone-else")], ["openChat"]]))
    eventually(lambda: stored_session(page, tenant.website_id).get("userId") == "someone-else")
    assert stored_session(page, tenant.website_id)["token"] != token
    page.wait_for_timeout(300)
    assert "Written on my phone" not in page.locator("[data-parley=widget]").inner_text()


def context_of(server, tenant, customer_id):
    async def read():
        async with await psycopg.AsyncConnection.connect(server.database_url) as conn:
            return await visitor_context(conn, tenant.org_id, uuid.UUID(customer_id))
    with ThreadPoolExecutor(1) as thread:  # Playwright's own loop runs on this one
        return thread.submit(asyncio.run, read()).result()


def test_readables_and_actions_reach_the_service(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "context", server.base_url, tenant.website_id, queued=[
        ["addReadable", {"userId": None, "description": "cart", "value": {"items": 2}}],
        ["addReadable", {"userId": None, "description": "page", "value": "/pricing"}],
        ["openChat"]]))
    page.evaluate("""window.$parley.push(['addAction', {userId: null, name: 'applyCoupon', description: 'Applies a coupon',
                                                         handler: () => 'applied'}],
                                        ['removeReadable', {userId: null, description: 'page'}])""")
    customer_id = eventually(lambda: http.get("/api/customers", headers=tenant.operator,
                                              params={"websiteId": str(tenant.website_id)}).json())[0]["_id"]

    def stored():
        found = context_of(server, tenant, customer_id)
        return found and [(r.description, r.value) for r in found.readables] == [("cart", {"items": 2})] \
            and [(a.name, a.description) for a in found.actions] == [("applyCoupon", "Applies a coupon")]
    eventually(stored)


def test_a_message_is_text_never_markup(page, host_pages, server, http):
    tenant = make_tenant(server)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(host_page(host_pages, "xss", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "<b>bold?</b>"], ["openChat"]]))
    wait_text(page, "<b>bold?</b>")
    attack = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    reply(http, tenant, the_conversation(http, tenant)["_id"], attack)
    wait_text(page, attack)
    page.wait_for_timeout(300)
    assert dialogs == []
    assert page.locator("[data-parley=widget] img, [data-parley=widget] b").count() == 0


HOSTILE = """<style>* { all: unset !important; color: red !important; font-size: 40px !important }
div { display: none !important } button { display: none !important } body::after { content: "host" }</style>"""


def test_hostile_host_css_cannot_break_it_and_its_css_does_not_leak(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "hostile", server.base_url, tenant.website_id, head=HOSTILE,
                        body="<p id=own>the host's own text</p>", queued=[["sendMessage", "Styled?"], ["openChat"]]))
    wait_text(page, "Styled?")
    launcher = page.locator("[data-parley=widget] .launcher")
    box = launcher.bounding_box()
    assert box and round(box["width"]) == 56 and round(box["height"]) == 56
    assert page.get_by_role("dialog").is_visible()
    text = page.locator("[data-parley=widget] .team .text, [data-parley=widget] .mine .text").first
    assert text.evaluate("e => getComputedStyle(e).color") == "rgb(255, 255, 255)"
    assert text.evaluate("e => getComputedStyle(e).fontSize") == "14px"
    # and nothing of the widget's style reaches the host page
    assert page.locator("#own").evaluate("e => getComputedStyle(e).color") == "rgb(255, 0, 0)"
    screenshot(page, "widget-hostile-css")


def test_keyboard_only(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "keyboard", server.base_url, tenant.website_id))
    launcher = page.get_by_role("button", name="Open chat")
    launcher.wait_for()
    assert launcher.get_attribute("aria-expanded") == "false"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.parley") == "widget"
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Chat with us")
    eventually(dialog.is_visible)
    assert page.locator("[data-parley=widget] .launcher").get_attribute("aria-expanded") == "true"
    assert page.get_by_role("log").count() == 1
    active = "document.querySelector('[data-parley=widget]').shadowRoot.activeElement"
    eventually(lambda: page.evaluate(f"{active} && {active}.tagName") == "TEXTAREA")
    assert page.get_by_label("Message").count() == 1
    page.keyboard.type("Typed with the keyboard")
    page.keyboard.press("Enter")
    wait_text(page, "Typed with the keyboard")
    page.keyboard.press("Escape")
    eventually(lambda: not dialog.is_visible())
    assert page.evaluate(f"{active}.className") == "launcher"
    assert page.evaluate(f"{active}.getAttribute('aria-expanded')") == "false"


def gzipped(*names):
    return sum(len(gzip.compress((WEB / name).read_bytes(), 9)) for name in names)


def test_size_budgets_and_no_other_host(page, host_pages, server):
    assert gzipped("widget.js", "parley-core.js") <= 40 * 1024
    assert gzipped("mascot.js", "parley-core.js") <= 25 * 1024
    tenant = make_tenant(server)
    hosts = set()
    page.on("request", lambda r: hosts.add(r.url.split("/")[2]))
    page.goto(host_page(host_pages, "requests", server.base_url, tenant.website_id, scripts=("widget.js", "mascot.js"),
                        extra=f"window.PARLEY_MASCOT = {{websiteId: '{tenant.website_id}'}};",
                        queued=[["sendMessage", "hi"]]))
    page.locator("[data-parley=widget] .launcher").wait_for()
    page.locator("[data-parley=mascot] .pet").wait_for()
    assert hosts == {host_pages.origin.split("/")[2], server.base_url.split("/")[2]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def restartable(infra, tmp_path):
    port = str(free_port())
    running = make_server(infra, tmp_path).start("--port", port)
    yield running, port
    running.stop()


def test_resumes_after_a_server_restart_with_nothing_lost_or_doubled(page, host_pages, restartable):
    server, port = restartable
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "restart", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Before the restart"], ["openChat"]]))
    wait_text(page, "Before the restart")
    with server.client() as http:
        conversation_id = the_conversation(http, tenant)["_id"]
        reply(http, tenant, conversation_id, "First reply")
    wait_text(page, "First reply")
    server.stop()
    server.start("--port", port)
    with server.client() as http:
        # posted at once: the widget is likely still reconnecting, and must get it from Last-Event-ID
        for n in range(3):
            reply(http, tenant, conversation_id, f"After the restart {n}")
    for n in range(3):
        wait_text(page, f"After the restart {n}")
    page.wait_for_timeout(500)
    texts = transcript_texts(page)
    assert texts == ["Before the restart", "First reply", "After the restart 0", "After the restart 1",
                     "After the restart 2"], texts
