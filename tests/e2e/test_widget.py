"""The chat widget in a real Chromium, on a host page served from another origin than the API: the command
queue before and after load, identity, the session across reloads, metadata and context, live replies,
resuming after a server restart, XSS, hostile host CSS, keyboard use and the size budgets; ratings,
reactions and help search; the team's typing; and a real AG-UI agent's streamed answer and offered action."""

from __future__ import annotations

import asyncio
import gzip
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from tests.support.agui_agent import AGUIAgent, open_cart_then_report, say
from tests.support.axe import assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, host_pages, page, screenshot  # noqa: F401 - fixtures
from tests.support.servers import make_server, make_tenant
from tests.support.documents_helpers import create, indexed
from tests.support.visitors import sign, start_session
from tests.support.widget_pages import Console, eventually, host_page, stored_session

from projections.chat import visitor_context

WEB = Path(__file__).resolve().parents[2] / "web"


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
    """The stored messages the widget shows (not one still being sent)."""
    return page.locator("[data-parley=widget] .log .msg[data-id] .text").all_text_contents()


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
    assert page.locator("[data-parley=widget] b").count() == 0
    # the only images are the ones the widget draws itself: the team's avatars, from the API's avatar path
    sources = page.locator("[data-parley=widget] img").evaluate_all("imgs => imgs.map(i => i.getAttribute('src'))")
    assert all(src.startswith(f"{server.base_url}/api/operators/") and "/avatar?v=" in src for src in sources), sources


def test_markdown_renders_in_the_widget_and_script_in_it_is_inert(page, host_pages, server, http):
    tenant = make_tenant(server)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(host_page(host_pages, "markdown", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Where is my parcel?"], ["openChat"]]))
    wait_text(page, "Where is my parcel?")
    reply(http, tenant, the_conversation(http, tenant)["_id"],
          "It takes **2 business days**.\n\n- [Track it](https://example.com/track)\n- [x](javascript:alert(1))\n\n"
          "<script>alert(2)</script> ![pixel](https://example.com/pixel.png)")
    bubble = page.locator("[data-parley=widget] .log .team .rich")
    bubble.locator("strong").wait_for()
    assert bubble.locator("strong").text_content() == "2 business days"
    link = bubble.locator("a")
    assert link.count() == 1
    assert (link.get_attribute("href"), link.get_attribute("target"), link.get_attribute("rel")) == (
        "https://example.com/track", "_blank", "noopener noreferrer")
    assert "<script>alert(2)</script>" in bubble.text_content()
    page.wait_for_timeout(300)
    assert dialogs == []
    assert page.locator("[data-parley=widget] script, [data-parley=widget] .rich img").count() == 0
    screenshot(page, "widget-markdown")


def test_the_emoji_picker_inserts_by_keyboard_and_passes_axe(page, host_pages, server, axe_script):
    tenant = make_tenant(server)
    lists = []
    page.on("request", lambda r: lists.append(r.url) if r.url.endswith("/emoji.json") else None)
    page.goto(host_page(host_pages, "emoji", server.base_url, tenant.website_id, queued=[["openChat"]]))
    widget = page.locator("[data-parley=widget]")
    box = widget.get_by_label("Message", exact=True)
    box.wait_for()
    assert lists == []  # the list is fetched on the first open, not with the widget
    box.fill("Thanks ")
    widget.get_by_role("button", name="Insert an emoji").click()
    widget.locator(".emoji").first.wait_for()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    assert box.input_value() == "Thanks \U0001F601"
    assert widget.locator(".emoji-panel").is_hidden()
    widget.get_by_role("button", name="Insert an emoji").click()
    widget.locator(".emoji").first.wait_for()
    assert_accessible(page, axe_script, "the widget's emoji picker")
    screenshot(page, "widget-emoji-picker")
    page.keyboard.press("Escape")
    assert widget.locator(".emoji-panel").is_hidden()
    assert widget.get_by_role("button", name="Insert an emoji").evaluate("b => b.getRootNode().activeElement === b")
    assert len(lists) == 1


def test_an_edit_and_a_deletion_show_live_in_the_widget(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "edits", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Is my refund through?"], ["openChat"]]))
    wait_text(page, "Is my refund through?")
    conversation_id = the_conversation(http, tenant)["_id"]
    first = reply(http, tenant, conversation_id, "Your refund was declined.")
    wait_text(page, "Your refund was declined.")
    edited = http.patch(f"/api/messages/{first['_id']}", headers=tenant.operator,
                        json={"content": "Your refund was **approved**."})
    assert edited.status_code == 200, edited.text
    wait_text(page, "Your refund was approved.")
    second = reply(http, tenant, conversation_id, "Sent to the wrong visitor")
    wait_text(page, "Sent to the wrong visitor")
    assert http.delete(f"/api/messages/{second['_id']}", headers=tenant.operator).status_code == 200
    wait_text(page, "Message removed")
    texts = transcript_texts(page)
    assert "Sent to the wrong visitor" not in texts and "Your refund was declined." not in texts
    screenshot(page, "widget-edited-and-removed")


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


# every module parley-core.js brings in, and the pet format the mascot fetches
CORE = ("parley-core.js", *sorted(str(path.relative_to(WEB)) for path in (WEB / "core").glob("*.js")), "app/dom.js")


# a page loads one language's catalogue besides English (core/i18n.js): counted at the largest
LARGEST_CATALOGUE = max((str(path.relative_to(WEB)) for path in (WEB / "core" / "i18n").glob("*.js")), key=gzipped)


def test_size_budgets_and_no_other_host(page, host_pages, server):
    assert gzipped("widget.js", *CORE, LARGEST_CATALOGUE) <= 40 * 1024
    # 25 KiB before this round's attachments, Markdown and emoji picker (29.4 KiB with them): 30 KiB until the
    # picker and the attachment controls load on first use (docs/widget.md)
    assert gzipped("mascot.js", *CORE, LARGEST_CATALOGUE, "pets/atlas.json") <= 30 * 1024
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


# --- ratings, reactions, help search, the team's typing

def widget_message(page, message_id):
    return page.locator(f"[data-parley=widget] .msg[data-id='{message_id}']")


def test_reacting_in_the_widget_is_stored_and_replies_carry_no_rating_icons(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "feedback", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Is it in stock?"], ["openChat"]]))
    wait_text(page, "Is it in stock?")
    answer = reply(http, tenant, the_conversation(http, tenant)["_id"], "Yes, 3 left.")
    wait_text(page, "Yes, 3 left.")
    stored = lambda: http.get(f"/api/messages/{answer['_id']}", headers=tenant.operator).json()
    bubble = widget_message(page, answer["_id"])
    # a reply is rated by the satisfaction prompt once resolved, never by icons under it
    assert bubble.locator(".face").count() == 0 and bubble.get_by_role("button").count() == 1
    bubble.get_by_role("button", name="React", exact=True).click()
    bubble.get_by_role("button", name="React with \U0001F44D").click()
    eventually(lambda: [(r["from"], r["emoji"]) for r in stored()["reactions"]] == [("customer", "\U0001F44D")])
    eventually(lambda: bubble.locator(".reactions").text_content() == "\U0001F44D")
    bubble.get_by_role("button", name="React", exact=True).click()
    assert bubble.get_by_role("button", name="React with \U0001F44D").get_attribute("aria-pressed") == "true"
    assert stored()["rating"] is None


def test_help_search_shows_published_documents_as_text(page, host_pages, server, http):
    tenant = make_tenant(server)
    title = "Returns <b>policy</b> <img src=x onerror=alert(1)>"
    create(http, tenant, title=title, content="Send the parcel back within 30 days.", published=True)
    create(http, tenant, title="Returns draft", content="Returns, not published yet.", published=False)
    indexed(server)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(host_page(host_pages, "help", server.base_url, tenant.website_id, queued=[["openChat"]]))
    page.get_by_role("button", name="Help", exact=True).click()
    page.get_by_label("Search help").fill("returns")
    page.keyboard.press("Enter")
    results = page.locator("[data-parley=widget] .results")
    results.locator("strong").first.wait_for()
    assert results.locator("strong").all_text_contents() == [title]
    results.get_by_role("button").click()
    document = page.locator("[data-parley=widget] .doc")
    document.locator("h3").wait_for()
    assert (document.locator("h3").text_content(), document.locator("p").text_content()) == (
        title, "Send the parcel back within 30 days.")
    assert page.locator("[data-parley=widget] img, [data-parley=widget] b").count() == 0 and dialogs == []


def team_typing(http, tenant, conversation_id, typing):
    response = http.post(f"/api/conversations/{conversation_id}/typing", headers=tenant.operator,
                         json={"typing": typing})
    assert response.status_code == 204, response.text


def test_the_team_typing_shows_until_it_stops_fades_or_the_reply_lands(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "typing", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Anyone there?"], ["openChat"]]))
    wait_text(page, "Anyone there?")
    conversation_id = the_conversation(http, tenant)["_id"]
    typing = page.locator("[data-parley=widget] .typing")
    for stop in ("false", "fade", "reply"):
        team_typing(http, tenant, conversation_id, True)
        eventually(lambda: typing.is_visible() and typing.text_content() == "The team is typing\u2026")
        if stop == "false":
            team_typing(http, tenant, conversation_id, False)
        elif stop == "reply":
            reply(http, tenant, conversation_id, "Here!")
        eventually(lambda: not typing.is_visible())  # "fade": nothing more comes, it hides by itself
    wait_text(page, "Here!")


# --- the website's AI agent (a real AG-UI agent: pydantic-ai's adapter on a scripted model)

@pytest.fixture(scope="module")
def agents(infra, tmp_path_factory):
    running = make_server(infra, tmp_path_factory.mktemp("widget-agents"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield running
    running.stop()


@pytest.fixture
def remote():
    agent = AGUIAgent().start()
    yield agent
    agent.stop()


def with_agent(server, tenant, remote, answer):
    with server.client() as client:
        response = client.put(f"/api/websites/{tenant.website_name}/agent", headers=tenant.operator,
                               json={"url": remote.url})
    assert response.status_code == 200, response.text
    remote.bearer, remote.answer = response.json()["secret"], answer


# Records, in the page, each text the streaming bubble showed, the most elements one message ever had at
# once, and whether the typing indicator showed: a record of every render, whatever the test's polling saw.
WATCH = """() => {
  const chat = document.querySelector('[data-parley=widget]').shadowRoot.querySelector('.chat');
  const seen = window.__streamed = [];
  window.__copies = 0;
  window.__typing = [];
  new MutationObserver(() => {
    const ids = [...chat.querySelectorAll('.log .msg[data-id]')].map((e) => e.dataset.id);
    window.__copies = Math.max(window.__copies, ...ids.map((id) => ids.filter((x) => x === id).length));
    const draft = chat.querySelector('.log .msg.draft .text');
    if (draft && draft.textContent !== seen[seen.length - 1]) seen.push(draft.textContent);
    const typing = chat.querySelector('.typing');
    if (!typing.hidden && !window.__typing.includes(typing.textContent)) window.__typing.push(typing.textContent);
  }).observe(chat, {childList: true, subtree: true, characterData: true, attributes: true});
}"""


def test_the_agents_answer_streams_into_the_widget_word_by_word_and_lands_once(page, host_pages, agents, remote):
    tenant = make_tenant(agents)
    parts = ["Your ", "order ", "<img src=x onerror=alert(1)> ", "ships ", "on ", "Monday."]
    full = "".join(parts)
    with_agent(agents, tenant, remote, say(*parts, pause=0.15))
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(host_page(host_pages, "agent-stream", agents.base_url, tenant.website_id, queued=[["openChat"]]))
    page.locator("[data-parley=widget] .log").wait_for()
    page.evaluate(WATCH)
    page.evaluate("window.$parley.push(['sendMessage', 'When does my order ship?'])")
    with agents.client() as client:
        conversation_id = the_conversation(client, tenant)["_id"]
        stored = eventually(lambda: [m for m in client.get("/api/messages", headers=tenant.operator, params={
            "conversationId": conversation_id}).json() if m["author"] == "agent"])
    [answer] = stored
    assert answer["content"] == full
    bubble = widget_message(page, answer["_id"])
    eventually(lambda: bubble.count() == 1 and "draft" not in bubble.get_attribute("class"))
    # the bubble grew delta by delta before the stored message took its place
    streamed = page.evaluate("window.__streamed")
    growing = [text for text in streamed if text != full]
    assert len(growing) >= 3 and all(full.startswith(text) for text in growing), streamed
    assert [len(text) for text in growing] == sorted({len(text) for text in growing}), streamed
    assert page.evaluate("window.__copies") == 1  # never a second copy, not even for a moment
    assert page.locator("[data-parley=widget] .msg.draft").count() == 0
    assert transcript_texts(page) == ["When does my order ship?", full]
    assert bubble.get_attribute("aria-busy") is None
    assert bubble.evaluate("e => e.closest('[role=log]').getAttribute('aria-live')") == "polite"
    assert "The assistant is typing\u2026" in page.evaluate("window.__typing")
    eventually(lambda: not page.locator("[data-parley=widget] .typing").is_visible())
    page.wait_for_timeout(300)
    assert page.locator("[data-parley=widget] img").count() == 0 and dialogs == []


ACTION_PAGE = """window.$parley.push(['addAction', {userId: null, name: 'openCart', description: 'Open the cart',
    handler: (args, call) => { (window.__handled = window.__handled || []).push([args, call]); return {opened: true}; }}]);
addEventListener('parley:action', (e) => (window.__events = window.__events || []).push(e.detail));"""


def test_an_offered_action_is_a_button_that_runs_the_pages_handler_once(page, host_pages, agents, remote):
    tenant = make_tenant(agents)
    with_agent(agents, tenant, remote, open_cart_then_report)
    page.goto(host_page(host_pages, "agent-action", agents.base_url, tenant.website_id, extra=ACTION_PAGE,
                        queued=[["openChat"]]))
    with agents.client() as client:
        customer = eventually(lambda: client.get("/api/customers", headers=tenant.operator,
                                                 params={"websiteId": str(tenant.website_id)}).json())[0]["_id"]
        eventually(lambda: (found := context_of(agents, tenant, customer)) and [a.name for a in found.actions] == ["openCart"])
        page.evaluate("window.$parley.push(['sendMessage', 'Show me my cart'])")
        button = page.locator("[data-parley=widget] .offer button")
        button.wait_for()
        assert button.text_content() == "Open the cart" and button.is_enabled()
        # two clicks before the first has finished: the handler runs and the result goes once
        button.evaluate("b => { b.click(); b.click(); }")
        wait_text(page, "Done: {'opened': True}")
        done = page.get_by_role("button", name="Open the cart (done)")
        assert done.text_content() == "\u2713 Open the cart" and done.is_disabled()
        screenshot(page, "widget-agent-action")
        assert page.evaluate("window.__handled") == [[{"highlight": "shoes"}, {"toolCallId": "call-1", "name": "openCart"}]]
        assert page.evaluate("window.__events") == [
            {"toolCallId": "call-1", "name": "openCart", "arguments": {"highlight": "shoes"}}]
        # the result reached the agent's next run as the protocol's tool message
        assert len(remote.requests) == 2
        tool = remote.requests[1].body["messages"][-1]
        assert (tool["role"], tool["toolCallId"], tool["content"]) == ("tool", "call-1", '{"opened":true}')


def test_a_reply_shows_its_authors_name_and_avatar_and_never_their_email(page, host_pages, server, http):
    tenant = make_tenant(server)
    grace = tenant.add_operator("agent")
    assert http.patch("/api/operators/me", headers=grace.headers, json={"displayName": "Grace Hopper"}).status_code == 200
    page.goto(host_page(host_pages, "author", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Who is there?"], ["openChat"]]))
    wait_text(page, "Who is there?")
    conversation_id = the_conversation(http, tenant)["_id"]
    posted = http.post("/api/messages", headers=grace.headers, json={
        "conversationId": conversation_id, "content": "Grace here, hello!", "from": "operator"})
    assert posted.status_code == 200, posted.text
    wait_text(page, "Grace here, hello!")
    author = page.locator(f"[data-parley=widget] .msg[data-id='{posted.json()['_id']}'] .author")
    eventually(lambda: author.text_content() == "Grace Hopper")
    avatar = author.locator("img.avatar")
    eventually(lambda: avatar.evaluate("img => img.complete && img.naturalWidth > 0"))  # the initials, drawn
    assert grace.email not in page.locator("[data-parley=widget]").inner_html()
    # the visitor's own messages name nobody
    assert page.locator("[data-parley=widget] .msg.mine .author").count() == 0
