"""The operator dashboard in a real browser (Debian's Chromium through Playwright): signing in and out, the
inbox against the API's own counts, live updates, the conversation's composer, reactions and ratings,
and every page's text shown as text."""

from __future__ import annotations


import dataclasses
import json
import time
from pathlib import Path

import pytest
from PIL import Image

from commands.pets import CELL_HEIGHT, CELL_WIDTH, validate

from tests.support.agui_agent import AGUIAgent, say
from tests.support.browser import browser, host_pages, screenshot  # noqa: F401 - fixtures
from tests.support.servers import basic, make_server, make_tenant
from tests.support.receivers import Receiver
from tests.support.visitors import Chatting
from tests.support.widget_pages import host_page

DEFAULT_ATLAS = Path(__file__).resolve().parents[2] / "web" / "pets" / "default" / "spritesheet.png"
PASSWORD = "correct horse"  # what conftest's make_tenant gives every operator
XSS = '<img src=x onerror="window.__xss=1">'


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    yield context
    context.close()


class Dashboard:
    """One operator's dashboard tab, with the page's errors and CSP violations collected."""

    def __init__(self, context, server, tenant):
        self.server, self.tenant = server, tenant
        self.page = context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", self.console)
        self.page.set_default_timeout(15_000)

    def console(self, message) -> None:
        # an API's refusal (a website without an agent is 404) is the page's to handle, and it does;
        # the browser logs it all the same
        if message.type == "error" and "/api/" not in message.location.get("url", ""):
            self.errors.append(message.text)

    def url(self, path: str = "/app/") -> str:
        return self.server.base_url + path

    def sign_in(self, path: str = "/app/") -> "Dashboard":
        self.page.goto(self.url(path))
        self.page.get_by_label("E-mail").fill(self.tenant.operator_email)
        self.page.get_by_label("Password").fill(PASSWORD)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_selector("parley-inbox[data-ready]")
        return self

    def wait_ready(self) -> None:
        self.page.wait_for_selector("parley-inbox[data-ready]")

    def counts(self) -> dict[str, int]:
        return {tab: int(self.page.text_content(f"[data-count={tab}]"))
                for tab in ("all", "unread", "unresolved", "resolved", "mentions", "spam", "mine", "unassigned",
                            "snoozed")}

    def wait_count(self, tab: str, count: int) -> None:
        # a function, not an expression: the page's CSP forbids evaluating strings
        self.page.wait_for_function("([tab, n]) => document.querySelector(`[data-count=${tab}]`)?.textContent === n",
                                    arg=[tab, str(count)])

    def token(self) -> str | None:
        return self.page.evaluate("localStorage.getItem('parley.token')")

    def assert_clean(self) -> None:
        """No script error, no CSP violation, and no markup from user text ever ran."""
        assert self.errors == []
        assert self.page.evaluate("window.__xss") is None


@pytest.fixture
def dashboard(context, server, tenant):
    return Dashboard(context, server, tenant)


def inbox_counts(http, tenant, conversation_filter: str = "all") -> dict[str, int]:
    return http.get("/api/conversations", headers=tenant.operator, params={
        "inboxFilter": "all", "websiteId": str(tenant.website_id), "conversationFilter": conversation_filter,
        "timezone": "UTC"}).json()["counts"]


def test_sign_in_shows_the_inbox_with_the_api_s_counts(dashboard, http, tenant):
    visitors = [Chatting(http, tenant) for _ in range(3)]
    visitors[0].say("first")
    visitors[1].say("second")
    http.patch(f"/api/conversations/{visitors[2].conversation_id}", headers=tenant.operator, json={"resolved": True})
    assert http.put("/api/chat/profile", headers=visitors[0].headers, json={"nickname": XSS}).status_code == 200
    dashboard.sign_in()
    dashboard.page.locator(".conversations .who", has_text=XSS).wait_for()  # names fill in once read
    assert dashboard.counts() == inbox_counts(http, tenant)
    assert dashboard.page.locator(".conversations li[data-id]").count() == 3
    assert "token" not in dashboard.page.url and dashboard.token() not in dashboard.page.url
    screenshot(dashboard.page, "inbox")
    dashboard.assert_clean()


def test_the_inbox_is_read_once_at_sign_in_and_not_again_to_open_a_conversation(dashboard, http, tenant):
    """The first screen waits for one read of the list (the labels' colours come beside it, not by a second
    read); opening a conversation of the list shown reads the conversation, not the list again (its read
    receipt then refreshes the list, for the Unread tab)."""
    visitors = [Chatting(http, tenant) for _ in range(2)]
    for visitor in visitors:
        visitor.say("hello")
    page = dashboard.page
    asked: list[str] = []
    page.on("request", lambda request: asked.append(
        "list" if "/api/conversations?" in request.url else "receipt" if request.url.endswith("/read") else "other"))
    dashboard.sign_in()
    for visitor in visitors:
        with page.expect_request(lambda request: request.url.endswith("/read")):
            page.click(f".conversations li[data-id='{visitor.conversation_id}'] a")
        page.wait_for_selector(f"parley-conversation[data-ready='{visitor.conversation_id}'] #composer-text")
        # from the sign-in (or the previous receipt) to this receipt: the list read once, or not at all
        before = asked[:asked.index("receipt")]
        assert before.count("list") == (1 if visitor is visitors[0] else 0), asked
        for _ in range(300):  # the list's refresh the receipt brings (debounced), before the next conversation
            if "list" in asked[asked.index("receipt"):]:
                break
            page.wait_for_timeout(50)
        asked.clear()
    dashboard.assert_clean()


def test_a_wrong_password_is_told_on_the_page_with_no_browser_dialog(dashboard):
    page = dashboard.page
    page.goto(dashboard.url())
    page.get_by_label("E-mail").fill(dashboard.tenant.operator_email)
    page.get_by_label("Password").fill("not the password")
    # a Basic challenge would hold the answer behind the browser's own user-name-and-password dialog
    # (headless, for ever)
    with page.expect_response(lambda r: r.url.endswith("/api/operators/sessions")) as answer:
        page.get_by_role("button", name="Sign in").click()
    assert answer.value.status == 401
    assert "basic" not in answer.value.headers["www-authenticate"].lower()
    page.get_by_text("Unknown e-mail address or wrong password.").wait_for()
    assert page.url.endswith("/app/signin") and dashboard.token() is None
    dashboard.assert_clean()


def test_a_conversation_live_reply_note_resolve_reactions_and_rating(dashboard, http, tenant):
    visitor = Chatting(http, tenant)
    visitor.say("Hello, my order is late")
    assert http.put("/api/chat/metadata", headers=visitor.headers,
                    json={"metadata": {"plan": "pro", XSS: XSS}}).status_code == 200
    dashboard.sign_in()
    page = dashboard.page
    page.click(f".conversations li[data-id='{visitor.conversation_id}'] a")
    page.wait_for_selector(".transcript .message.customer")
    metadata = page.locator(".profile .metadata")
    assert metadata.locator("dt").all_text_contents() == ["plan", XSS]
    assert metadata.locator("dd").all_text_contents() == ["pro", XSS]

    # the read receipt: viewing it marks the visitor's message read, and the Unread tab empties
    dashboard.wait_count("unread", 0)
    assert inbox_counts(http, tenant)["unread"] == 0

    # a new visitor message appears live, without a reload
    visitor.say(XSS)
    page.wait_for_selector(f".transcript .message.customer >> text={XSS}")

    # a reply reaches the visitor; an internal note (mentioning a teammate) never does
    page.fill("#composer-text", "We are on it")
    page.keyboard.press("Enter")
    page.wait_for_selector(".transcript .message.operator >> text=We are on it")
    page.check("input[value=note]")
    page.fill("#composer-text", f"@{tenant.operator_email[:4]}")
    page.wait_for_selector("#mentions li[data-email]")
    page.keyboard.press("Enter")  # picks the suggestion
    page.type("#composer-text", "please check the carrier")
    page.keyboard.press("Enter")
    page.wait_for_selector(".transcript .message.note >> text=please check the carrier")
    seen = [m["content"] for m in visitor.transcript()]
    assert "We are on it" in seen and not any("carrier" in text for text in seen)
    dashboard.wait_count("mentions", 1)

    # the visitor rates the reply and reacts; the operator reacts back: both sides see both
    reply = next(m for m in visitor.transcript() if m["content"] == "We are on it")
    assert http.post(f"/api/messages/{reply['_id']}/rating", headers=visitor.headers,
                     json={"websiteId": str(tenant.website_id), "rating": "happy"}).status_code == 200
    assert http.post(f"/api/messages/{reply['_id']}/reaction/customer", headers=visitor.headers,
                     json={"websiteId": str(tenant.website_id), "emoji": "🎉"}).status_code == 200
    shown = page.locator(f".message[data-id='{reply['_id']}']")
    shown.locator(".rating").wait_for()
    assert "Happy" in shown.locator(".rating").text_content()
    shown.locator(".reaction", has_text="🎉").wait_for()
    first = page.locator(".message.customer").first
    first.get_by_role("button", name="React").click()
    first.get_by_role("button", name="React 👍").click()
    first.locator(".reaction[aria-pressed=true]", has_text="👍").wait_for()
    customer_view = next(m for m in visitor.transcript() if m["from"] == "customer")
    assert customer_view["reactions"] == [{"emoji": "👍", "from": "operator"}]

    # the message sent as markup is shown as its characters, and ran nothing
    assert page.locator(".message.customer .content", has_text=XSS).count() == 1
    # the only images are the ones the page draws itself: the team's avatars, from the API's avatar path
    sources = page.locator(".transcript img").evaluate_all("imgs => imgs.map(i => i.getAttribute('src'))")
    assert all(src.startswith("/api/operators/") and "/avatar?v=" in src for src in sources), sources
    screenshot(page, "conversation")

    # resolving moves it from Unresolved to Resolved, and the history says who did it
    page.click("#resolve")
    page.click("#show-history")
    page.locator(".history li", has_text=f"conversation updated by {tenant.operator_email}").wait_for()
    dashboard.wait_count("resolved", 1)
    page.click("[data-tab=resolved]")
    page.wait_for_selector(f".conversations li[data-id='{visitor.conversation_id}']")
    page.click("[data-tab=unresolved]")
    page.wait_for_selector(".conversations .empty")
    dashboard.assert_clean()


def test_sign_out_revokes_the_token_and_leaves_nothing_usable(dashboard, http, tenant):
    dashboard.sign_in()
    token = dashboard.token()
    assert http.get("/api/websites", headers={"Authorization": f"Token {token}"}).status_code == 200
    dashboard.page.click("#sign-out")
    dashboard.page.wait_for_selector("form.signin")
    assert dashboard.token() is None
    assert dashboard.page.evaluate("Object.keys(localStorage).filter(k => /token/i.test(k))") == []
    assert http.get("/api/websites", headers={"Authorization": f"Token {token}"}).status_code == 401
    dashboard.page.goto(dashboard.url("/app/inbox"))
    dashboard.page.wait_for_selector("form.signin")
    dashboard.assert_clean()


def test_an_api_key_created_in_the_dashboard_works_and_its_secret_is_shown_once(dashboard, http, tenant):
    page = dashboard.sign_in().page
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("nav >> text=API keys")
    page.fill("#key-name", XSS)
    page.check("input[value='websites:read']")
    page.fill("#key-rate", "100")
    page.click("text=Create key")
    secret = page.text_content(".secret-value")
    assert secret.startswith("pk_")
    listed = http.get("/api/websites", headers=basic(secret))
    assert listed.status_code == 200 and [w["_id"] for w in listed.json()] == [str(tenant.website_id)]
    assert http.get("/api/customers", headers=basic(secret)).status_code == 403
    row = page.locator("tbody tr").first
    assert row.locator("td").first.text_content() == XSS
    screenshot(page, "api-keys")

    page.reload()
    page.wait_for_selector("tbody tr")
    assert secret not in page.content()
    page.click("tbody tr >> text=Revoke")
    page.wait_for_selector("tbody tr >> text=Revoked")
    assert http.get("/api/websites", headers=basic(secret)).status_code == 401
    dashboard.assert_clean()


def test_an_agent_sees_only_the_pages_its_role_may_use(context, server, tenant):
    agent = tenant.add_operator("agent")
    page = Dashboard(context, server, dataclasses.replace(tenant, operator_email=agent.email)).sign_in().page
    assert page.locator("nav a").all_text_contents() == ["Inbox", "Help documents", "Canned responses", "Reports"]
    answers = []
    page.on("response", lambda response: answers.append(response.status) if "/api/apikeys" in response.url else None)
    page.goto(server.base_url + "/app/keys")
    page.locator(".role-refused", has_text="Your role (agent) cannot use API keys").wait_for()
    assert answers == []  # the page says so rather than send requests bound to fail


def test_the_profile_sets_the_name_and_avatar_that_replies_and_notes_show(dashboard, http, tenant, tmp_path):
    photo = tmp_path / "me.png"
    Image.new("RGB", (300, 200), (20, 120, 200)).save(photo)
    page = dashboard.sign_in().page
    page.locator("header .me").click()
    page.get_by_label("Display name").fill("Ada Lovelace")
    page.get_by_role("button", name="Save", exact=True).click()
    page.locator(".notice", has_text="Saved.").wait_for()
    page.get_by_label("Image").set_input_files(str(photo))
    page.get_by_role("button", name="Upload").click()
    page.locator("#profile-avatar-form .notice", has_text="avatar is saved").wait_for()
    assert "/avatar?v=" in page.locator("#profile-avatar").get_attribute("src")

    visitor = Chatting(http, tenant)
    visitor.say("Who is this?")
    for content, internal in (("It is Ada", False), ("a note by Ada", True)):
        assert http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": visitor.conversation_id, "content": content, "from": "operator",
            "internal": internal}).status_code == 200
    page.goto(dashboard.url(f"/app/inbox/{visitor.conversation_id}"))
    page.locator(".message.operator .who", has_text="Ada Lovelace").wait_for()
    page.locator(".message.note .who", has_text="Internal note by Ada Lovelace").wait_for()
    page.wait_for_function("() => [...document.querySelectorAll('.message.operator .meta img.avatar')]"
                           ".some((img) => img.complete && img.naturalWidth > 0)")
    assert tenant.operator_email not in page.locator(".transcript").inner_text()
    dashboard.assert_clean()


def test_a_document_created_in_the_dashboard_is_found_by_the_search_box(dashboard, tenant):
    page = dashboard.sign_in().page
    page.click("nav >> text=Help documents")
    page.click("#new-document")
    page.fill("#doc-title", f"Resetting your password {XSS}")
    page.fill("#doc-category", "Account")
    page.check("#doc-published")
    page.fill("#doc-content", "Open Settings, choose Security and press Reset password. A link arrives by e-mail.")
    page.click("form >> text=Save")
    page.wait_for_selector("tbody tr >> text=Published")
    assert page.locator("tbody td", has_text=XSS).count() == 1
    page.fill("#try-search", "how do I reset my password")
    # the first search may find the search index still embedding (503 "retry shortly"): ask again, as a person would
    deadline = time.monotonic() + 240
    while page.locator(".search-results li", has_text="Resetting your password").count() == 0:
        assert time.monotonic() < deadline, page.text_content("form.card")
        page.get_by_role("button", name="Search", exact=True).click()
        page.wait_for_timeout(1000)
    assert XSS in page.text_content(".search-results li strong")
    screenshot(page, "documents")
    dashboard.assert_clean()


@pytest.fixture(scope="module")
def hooks_server(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("dashboard-hooks"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield server
    server.stop()


def test_a_webhook_delivery_shows_in_the_log(context, hooks_server):
    tenant = make_tenant(hooks_server)
    dashboard = Dashboard(context, hooks_server, tenant)
    page = dashboard.sign_in().page
    page.click("nav >> text=Webhooks")
    with Receiver() as receiver:
        page.fill("#hook-url", receiver.url)
        page.check("input[value='customer.created']")
        page.click("text=Subscribe")
        assert page.text_content(".secret-value").startswith("whsec_")
        with hooks_server.client() as client:
            assert client.post("/api/customers", headers=tenant.operator,
                               json={"websiteId": str(tenant.website_id)}).status_code == 200
        receiver.wait_for(1)
        card = page.locator("section[data-id]").first
        deadline = time.monotonic() + 30
        while card.locator(".delivery-status", has_text="succeeded").count() == 0:
            assert time.monotonic() < deadline, "the delivery never showed as succeeded"
            card.get_by_role("button", name="Delivery log").click()
            page.wait_for_timeout(300)
        screenshot(page, "webhooks")
    dashboard.assert_clean()


def test_websites_and_reports_pages(dashboard, http, tenant):
    Chatting(http, tenant).say("hello")
    page = dashboard.sign_in().page
    page.click("nav >> text=Websites")
    page.fill("#website-name", "docs-site-" + tenant.website_name[-6:])
    page.click("text=Create website")
    secret = page.text_content(".secret-value")
    assert len(secret) == 64
    created = next(w for w in http.get("/api/websites", headers=tenant.operator).json()
                   if w["websiteName"].startswith("docs-site-"))
    card = page.locator(f"section[data-website='{created['websiteName']}']")
    assert created["_id"] in card.locator("pre").first.text_content()
    card.get_by_label("Allowed origins").fill("https://Shop.Example.com")
    card.get_by_role("button", name="Save origins").click()
    card.locator("text=Saved.").wait_for()
    assert http.get(f"/api/websites/{created['websiteName']}",
                    headers=tenant.operator).json()["allowedOrigins"] == ["https://shop.example.com"]
    page.reload()
    page.wait_for_selector("section[data-website]")
    assert secret not in page.content()
    screenshot(page, "websites")

    page.click("nav >> text=Reports")
    page.wait_for_selector("parley-reports[data-ready] svg")
    assert page.locator("figure.chart").count() == 5
    screenshot(page, "reports")
    dashboard.assert_clean()


def broken_atlas(folder: Path) -> Path:
    """The default pet with an unused cell painted and a frame emptied: two broken rules."""
    atlas = Image.open(DEFAULT_ATLAS).convert("RGBA")
    x, y = 7 * CELL_WIDTH, 3 * CELL_HEIGHT  # row 3 (waving) has 4 frames: column 7 must stay empty
    atlas.paste((255, 0, 0, 255), (x + 10, y + 10, x + 20, y + 20))
    atlas.paste((0, 0, 0, 0), (0, 4 * CELL_HEIGHT, CELL_WIDTH, 5 * CELL_HEIGHT))
    atlas.save(folder / "broken.png")
    return folder / "broken.png"


def snippet_config(context, snippet: str):
    """What the mascot snippet's first script sets, run as a customer's page would run it (without
    loading mascot.js), with anything its text might smuggle in as markup caught."""
    page = context.new_page()
    try:
        page.set_content(snippet.split("\n<script async")[0])
        return page.evaluate("() => [window.PARLEY_MASCOT, window.__xss ?? null]")
    finally:
        page.close()


def test_the_mascot_pet_previewed_validated_and_in_the_snippet(dashboard, context, tenant, tmp_path):
    page = dashboard.sign_in().page
    page.click("nav >> text=Websites")
    pet = page.locator(f"section[data-website='{tenant.website_name}'] .pet")
    snippet = page.locator(f"section[data-website='{tenant.website_name}'] .mascot-snippet")
    preview = pet.locator(".pet-preview")
    assert "pet:" not in snippet.text_content()  # no pet of its own: the mascot shows the default one

    # the default atlas: drawn from this browser's memory, animated, and judged valid
    pet.get_by_label("Atlas file").set_input_files(str(DEFAULT_ATLAS))
    pet.locator(".verdict").wait_for()
    assert pet.locator(".verdict").text_content() == "Valid: the atlas follows every rule of the pet format."
    image = preview.evaluate("""el => new Promise((done) => {
        const url = getComputedStyle(el).backgroundImage.slice(5, -2), image = new Image();
        image.onload = () => done([url, image.naturalWidth, image.naturalHeight]);
        image.onerror = () => done([url, 0, 0]);
        image.src = url;
    })""")
    assert image[0].startswith("blob:") and image[1:] == [1536, 2288]
    assert preview.get_attribute("data-row") == "0"  # idle
    first = preview.evaluate("el => getComputedStyle(el).backgroundPosition")
    page.wait_for_function("([el, first]) => getComputedStyle(el).backgroundPosition !== first",
                           arg=[preview.element_handle(), first])  # the frames move (however fast)
    pet.get_by_label("Row").select_option("waving")
    page.wait_for_function("el => getComputedStyle(el).backgroundPositionY === '-624px'", arg=preview.element_handle())
    assert preview.get_attribute("data-row") == "3"
    pet.get_by_label("Row").select_option("idle")

    pet.get_by_label("Pet name").fill("Pip")
    pet.get_by_label("Atlas URL").fill("https://cdn.example.com/pets/pip.png")
    assert ('pet: {id: "pip", name: "Pip", spritesheet: "https://cdn.example.com/pets/pip.png"}'
            in snippet.text_content())
    pet.scroll_into_view_if_needed()
    screenshot(page, "dashboard-pet")

    # a broken atlas: each failure listed, the very sentences of `parley pets validate`
    broken = broken_atlas(tmp_path)
    pet.get_by_label("Atlas file").set_input_files(str(broken))
    pet.locator(".verdict .failures li").first.wait_for()
    assert pet.locator(".verdict .status-bad").text_content() == "Not valid:"
    expected = [line.replace(str(broken), "atlas") for line in validate(broken)]
    assert len(expected) == 2 and pet.locator(".verdict .failures li").all_text_contents() == expected

    # a hostile name is text on the page, and string data in the snippet, whatever page runs it
    hostile = "</script>" + XSS  # unescaped, it would end the snippet's script and run the markup
    pet.get_by_label("Pet name").fill(hostile)
    assert pet.locator("figcaption").text_content() == hostile
    assert f"name: {json.dumps(hostile).replace('<', chr(92) + 'u003c')}" in snippet.text_content()
    config, xss = snippet_config(context, snippet.text_content())
    assert config["pet"]["name"] == hostile and config["websiteId"] == str(tenant.website_id) and xss is None

    # without a URL the pet is left out again
    pet.get_by_label("Atlas URL").fill("")
    assert "pet:" not in snippet.text_content()
    assert "pet" not in snippet_config(context, snippet.text_content())[0]
    dashboard.assert_clean()


def test_the_inbox_at_a_phone_s_width(browser, server, http, tenant):
    chatting = Chatting(http, tenant)
    chatting.say("Sent from my phone")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        dashboard = Dashboard(context, server, tenant)
        page = dashboard.sign_in().page
        screenshot(page, "inbox-phone")
        page.click(f".conversations li[data-id='{chatting.conversation_id}'] a")
        page.wait_for_selector(".transcript .message.customer")
        assert not page.is_visible(".list-pane") and page.is_visible(".conversation-header .back")
        scroll_width = page.evaluate("() => document.documentElement.scrollWidth")
        assert scroll_width <= 390, "the page scrolls sideways at a phone's width"
        screenshot(page, "conversation-phone")
        page.click(".conversation-header .back")
        page.wait_for_selector(".list-pane")
        dashboard.assert_clean()
    finally:
        context.close()


def tab_to(page, selector: str, presses: int = 60) -> None:
    """Presses Tab until the focused element matches `selector`: the page is usable without a mouse."""
    for _ in range(presses):
        if page.evaluate("(selector) => document.activeElement?.matches(selector) ?? false", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def test_the_inbox_and_a_reply_by_keyboard_alone(dashboard, http, tenant):
    chatting = Chatting(http, tenant)
    chatting.say("Can you hear me?")
    page = dashboard.page
    page.goto(dashboard.url())
    page.wait_for_selector("form.signin")
    page.keyboard.type(tenant.operator_email)  # the e-mail field has the focus
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    dashboard.wait_ready()
    tab_to(page, f".conversations li[data-id='{chatting.conversation_id}'] a")
    page.keyboard.press("Enter")
    page.wait_for_selector(".transcript .message.customer")
    tab_to(page, ".message.customer button.link")  # Quote
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "composer-text"
    page.keyboard.type("Loud and clear")
    page.keyboard.press("Enter")
    page.wait_for_selector(".transcript .message.operator >> text=Loud and clear")
    reply = next(m for m in chatting.transcript() if m["content"] == "Loud and clear")
    assert reply["replyToMessageId"] == chatting.transcript()[0]["_id"]
    dashboard.assert_clean()


def test_a_campaign_drafted_previewed_and_sent_from_the_dashboard(dashboard, http, tenant):
    reached = Chatting(http, tenant)
    reached.say("hi")
    page = dashboard.sign_in().page
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("nav >> text=Campaigns")
    page.fill("#campaign-name", f"Spring {XSS}")
    page.fill("#campaign-content", "20% off this week")
    page.select_option("#audience-conversation", "true")
    page.click("text=Save draft")
    card = page.locator("section[data-id]").first
    card.locator("h3", has_text=XSS).wait_for()
    card.get_by_role("button", name="Preview audience").click()
    card.locator("text=1 visitors would receive it").wait_for()
    card.get_by_role("button", name="Send now").click()
    deadline = time.monotonic() + 30
    while "sent" not in page.locator("section[data-id] .badge").first.text_content():
        assert time.monotonic() < deadline, "the campaign never showed as sent"
        page.click("nav >> text=Campaigns")
        page.wait_for_timeout(300)
    assert any(m["content"] == "20% off this week" for m in http.get(
        "/api/messages", headers=tenant.operator, params={"limit": 0}).json())
    screenshot(page, "campaigns")
    dashboard.assert_clean()


@pytest.fixture(scope="module")
def agents_server(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("dashboard-agents"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield server
    server.stop()


def test_the_agent_configured_streaming_marked_and_paused_from_the_dashboard(context, agents_server):
    tenant = make_tenant(agents_server)
    dashboard = Dashboard(context, agents_server, tenant)
    page = dashboard.sign_in().page
    remote = AGUIAgent().start()
    try:
        page.click("nav >> text=Websites")
        card = page.locator(f"section[data-website='{tenant.website_name}']")
        card.locator(f"#agent-url-{tenant.website_id}").fill(remote.url)
        card.get_by_role("button", name="Add agent").click()
        remote.bearer = card.locator(".secret-value").text_content()
        remote.answer = say("Happy ", "to ", "help!", pause=0.6)

        with agents_server.client() as client:
            chatting = Chatting(client, tenant)
            page.click("nav >> text=Inbox")
            page.click(f".conversations li[data-id='{chatting.conversation_id}'] a")
            page.wait_for_selector(".composer")
            chatting.say("Can someone help?")
            # the answer streams in before it is stored whole, marked as the agent's
            page.locator(".message.agent .content", has_text="Happy").wait_for()
            assert page.locator(".message.agent .content").text_content() != "Happy to help!"
            page.locator(".message.agent .content", has_text="Happy to help!").wait_for()
            assert page.locator(".message.agent .who").text_content() == "AI agent"
            page.click("#agent")
            page.locator("#agent", has_text="Resume AI agent").wait_for()
            assert client.get(f"/api/conversations/{chatting.conversation_id}",
                              headers=tenant.operator).json()["agentPaused"] is True
        dashboard.assert_clean()
    finally:
        remote.stop()


def test_a_visitor_on_the_widget_and_the_dashboard_talk_live(browser, context, host_pages, server, http, tenant):
    dashboard = Dashboard(context, server, tenant)
    page = dashboard.sign_in().page
    visitor_context = browser.new_context()
    try:
        widget = visitor_context.new_page()
        widget.goto(host_page(host_pages, f"shop-{tenant.website_name}", server.base_url, tenant.website_id,
                              queued=[["sendMessage", "Hi from the widget"], ["openChat"]]))
        # the new conversation and its message appear in the open inbox without a reload
        row = page.locator(".conversations li[data-id]").first
        row.wait_for()
        row.locator("a").click()
        page.locator(".message.customer .content", has_text="Hi from the widget").wait_for()

        # the visitor sees the team typing (POST /api/conversations/{id}/typing), until the reply lands
        typing = widget.locator("[data-parley=widget] .typing", has_text="The team is typing")
        page.fill("#composer-text", "Hello from the team")
        typing.wait_for()
        page.keyboard.press("Enter")
        typing.wait_for(state="hidden")
        page.check("input[value=note]")
        page.fill("#composer-text", "a note for the team only")
        page.keyboard.press("Enter")
        page.locator(".message.note", has_text="a note for the team only").wait_for()
        widget.locator("[data-parley=widget] .log .text", has_text="Hello from the team").wait_for()
        widget.locator("[data-parley=widget] .log .text", has_text="Hi from the widget").wait_for()
        assert "a note for the team only" not in widget.locator("[data-parley=widget]").inner_text()
        dashboard.assert_clean()
    finally:
        visitor_context.close()
