"""The widget as a customer configures it and as a visitor expects it, in a real Chromium on a host page of
another origin: the website's saved settings reach the widget on the next load, the dashboard's preview is
the widget, languages (Arabic right to left), signing in mid-chat keeps the conversation, `reset` on a
shared browser, a queued message across a reload, the satisfaction prompt, a send while the server is down,
page events, and accessibility and screenshots of each state."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from tests.e2e.test_dashboard import Dashboard, context  # noqa: F401 - fixture
from tests.e2e.test_widget import conversations_of, free_port, reply, restartable, the_conversation, transcript_texts, wait_text  # noqa: F401
from tests.support.axe import assert_accessible, axe_script  # noqa: F401 - fixture
from tests.support.browser import browser, host_pages, page, screenshot  # noqa: F401 - fixtures
from tests.support.servers import make_tenant
from tests.support.visitors import EventStream, sign
from tests.support.widget_pages import Console, eventually, host_page, stored_session

WIDGET = "[data-parley=widget]"


def at_the_dashboard(http, tenant):
    """The tenant's operator is active: the team reads as online, so the widget welcomes (not away)."""
    assert http.post("/api/operators/me/activity", headers=tenant.operator).status_code in (200, 204)


def configure(http, tenant, **settings):
    saved = http.put(f"/api/websites/{tenant.website_name}/widget", headers=tenant.operator, json=settings)
    assert saved.status_code == 200, saved.text
    return saved.json()


def shadow(page, selector: str, expression: str):
    """`expression` (of `e`) on the element `selector` finds in the widget's shadow root."""
    return page.locator(f"{WIDGET} {selector}").evaluate(f"e => {expression}")


def header_look(frame_or_page, where: str = WIDGET):
    head = frame_or_page.locator(f"{where} .head")
    return {"title": head.locator("h2").text_content(),
            "background": head.evaluate("e => getComputedStyle(e).backgroundColor"),
            "launcher": frame_or_page.locator(f"{where} .launcher").evaluate("e => getComputedStyle(e).backgroundColor")
            if where == WIDGET else None}


def test_saved_settings_reach_the_widget_on_the_next_load(page, host_pages, server, http, axe_script):
    tenant = make_tenant(server)
    at_the_dashboard(http, tenant)
    url = host_page(host_pages, "configured", server.base_url, tenant.website_id, queued=[["openChat"]])
    page.goto(url)
    eventually(lambda: page.get_by_role("dialog", name="Chat with us").is_visible())
    assert header_look(page)["background"] == "rgb(18, 52, 86)"  # the tenant's #123456
    configure(http, tenant, brandColor="#0f766e", title="Acme support", welcomeMessage="Hello from Acme!",
              position="left", launcherLabel="Ask Acme")
    page.reload()
    eventually(lambda: page.get_by_role("dialog", name="Acme support").is_visible())
    look = header_look(page)
    assert look["background"] == look["launcher"] == "rgb(15, 118, 110)"
    assert page.locator(f"{WIDGET} .empty").text_content() == "Hello from Acme!"
    assert page.locator(f"{WIDGET} .launcher .label").text_content() == "Ask Acme"
    box = page.locator(f"{WIDGET} .launcher").bounding_box()
    assert box["x"] < 100  # at the left edge
    assert_accessible(page, axe_script, "the configured widget, open")
    # setBrandColor still overrides at run time
    page.evaluate("window.$parley.push(['setBrandColor', 'rgb(200, 30, 90)'])")
    eventually(lambda: header_look(page)["background"] == "rgb(200, 30, 90)")
    page.evaluate("window.$parley.push(['closeChat'])")
    eventually(lambda: not page.get_by_role("dialog").is_visible())
    assert_accessible(page, axe_script, "the configured widget, closed")

    # dark mode, and the help search hidden
    configure(http, tenant, theme="dark", helpSearch=False, position="right", launcherLabel=None)
    page.goto(url)
    eventually(lambda: page.get_by_role("dialog", name="Acme support").is_visible())
    eventually(lambda: shadow(page, ".log", "getComputedStyle(e).backgroundColor") == "rgb(18, 20, 28)")
    assert page.locator(f"{WIDGET} .help-toggle").is_hidden()
    page.evaluate("window.$parley.push(['sendMessage', 'Dark mode, please'])")
    wait_text(page, "Dark mode, please")
    assert_accessible(page, axe_script, "the widget in dark mode")
    screenshot(page, "widget-dark")


def test_languages_french_from_the_page_and_arabic_right_to_left(page, host_pages, server, http, axe_script):
    tenant = make_tenant(server)
    configure(http, tenant, language="de")
    # the website's default language, on a page that names none
    page.goto(host_page(host_pages, "german", server.base_url, tenant.website_id, queued=[["openChat"]], lang=None))
    eventually(lambda: page.get_by_role("dialog", name="Schreiben Sie uns").is_visible())
    # the page's own language comes first
    page.goto(host_page(host_pages, "french", server.base_url, tenant.website_id, queued=[["openChat"]], lang="fr"))
    eventually(lambda: page.get_by_role("dialog", name="Discutons").is_visible())
    assert page.locator(f"{WIDGET} .composer .send").text_content() == "Envoyer"
    page.evaluate("window.$parley.push(['sendMessage', 'Bonjour'])")
    wait_text(page, "Bonjour")
    customer_id = the_conversation(http, tenant)["customerId"]
    eventually(lambda: http.get(f"/api/customers/{customer_id}", headers=tenant.operator).json()["language"] == "fr")
    screenshot(page, "widget-french")

    page.evaluate("window.$parley.push(['setLocale', 'ar'])")
    eventually(lambda: page.get_by_role("dialog", name="تحدث معنا").is_visible())
    assert shadow(page, ".root", "e.getAttribute('dir')") == "rtl"
    assert shadow(page, ".head", "getComputedStyle(e).direction") == "rtl"
    # right to left: the title starts at the right, the close button sits at the left
    title = page.locator(f"{WIDGET} .head h2").bounding_box()
    close = page.locator(f"{WIDGET} .head .close").bounding_box()
    assert close["x"] < title["x"]
    eventually(lambda: http.get(f"/api/customers/{customer_id}", headers=tenant.operator).json()["language"] == "ar")
    assert_accessible(page, axe_script, "the widget in Arabic")
    screenshot(page, "widget-arabic")


def test_signing_in_mid_chat_keeps_the_conversation_and_the_next_reply_arrives(page, host_pages, server, http):
    tenant = make_tenant(server)
    user = f"user-{uuid.uuid4().hex[:6]}"
    page.goto(host_page(host_pages, "mid-chat", server.base_url, tenant.website_id, queued=[["openChat"]]))
    page.locator(f"{WIDGET} .launcher").wait_for()
    page.evaluate("window.$parley.push(['sendMessage', 'Anonymous question'])")
    wait_text(page, "Anonymous question")
    conversation = the_conversation(http, tenant)
    reply(http, tenant, conversation["_id"], "An answer before sign-in")
    wait_text(page, "An answer before sign-in")
    anonymous_token = stored_session(page, tenant.website_id)["token"]

    # a signature for another user id is refused and changes nothing
    console = Console(page)
    page.evaluate(f"window.$parley.push(['setUserId', '{user}', '{sign(tenant.identity_secret, 'someone-else')}'])")
    console.wait_for_warning("the signature does not match")
    assert stored_session(page, tenant.website_id)["token"] == anonymous_token
    assert transcript_texts(page) == ["Anonymous question", "An answer before sign-in"]

    page.evaluate(f"window.$parley.push(['setUserId', '{user}', '{sign(tenant.identity_secret, user)}'])")
    eventually(lambda: stored_session(page, tenant.website_id).get("userId") == user)
    assert stored_session(page, tenant.website_id)["token"] != anonymous_token
    record = http.get(f"/api/conversations/{conversation['_id']}", headers=tenant.operator).json()
    customer = http.get(f"/api/customers/{record['customerId']}", headers=tenant.operator).json()
    assert customer["userId"] == user
    assert len(conversations_of(http, tenant)) == 1
    reply(http, tenant, conversation["_id"], "After you signed in")
    wait_text(page, "After you signed in")
    page.reload()
    wait_text(page, "After you signed in")
    assert transcript_texts(page) == ["Anonymous question", "An answer before sign-in", "After you signed in"]


def test_reset_on_a_shared_browser_shows_an_empty_chat(page, host_pages, server, http):
    tenant = make_tenant(server)
    user = "shared-" + uuid.uuid4().hex[:6]
    url = host_page(host_pages, "shared", server.base_url, tenant.website_id, queued=[
        ["setUserId", user, sign(tenant.identity_secret, user)], ["sendMessage", "My private order 42"], ["openChat"]])
    page.goto(url)
    wait_text(page, "My private order 42")
    old = stored_session(page, tenant.website_id)["token"]
    page.evaluate("window.$parley.push(['reset'])")
    eventually(lambda: transcript_texts(page) == [])
    assert "My private order 42" not in page.locator(WIDGET).inner_text()
    assert stored_session(page, tenant.website_id) == {}
    # the old page state's token reads nothing more
    eventually(lambda: http.get("/api/chat/conversations", headers={"Authorization": f"ChatSession {old}"}).status_code == 401)
    # the next visitor: anonymous, empty, and a new session
    page.goto(host_page(host_pages, "shared-next", server.base_url, tenant.website_id, queued=[["openChat"]]))
    eventually(lambda: stored_session(page, tenant.website_id).get("token"))
    page.wait_for_timeout(500)
    assert stored_session(page, tenant.website_id)["token"] != old
    assert stored_session(page, tenant.website_id).get("userId") is None
    assert "My private order 42" not in page.locator(WIDGET).inner_text()


def test_a_queued_message_and_a_reload_never_make_a_second_conversation(page, host_pages, server, http):
    tenant = make_tenant(server)
    url = host_page(host_pages, "queued", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Queued at start-up"], ["openChat"]])
    page.goto(url)
    wait_text(page, "Queued at start-up")
    for _ in range(3):
        page.reload()  # the page queues the same message again at each load
        page.wait_for_timeout(150)
    page.reload()
    eventually(lambda: transcript_texts(page).count("Queued at start-up") >= 2)
    page.wait_for_timeout(1000)
    found = conversations_of(http, tenant)
    assert len(found) == 1, found


def test_the_satisfaction_prompt_on_resolve_rates_the_teams_last_reply(page, host_pages, server, http, axe_script):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "survey", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Can you help?"], ["openChat"]]))
    wait_text(page, "Can you help?")
    conversation_id = the_conversation(http, tenant)["_id"]
    first = reply(http, tenant, conversation_id, "Sure, one moment")
    last = reply(http, tenant, conversation_id, "Done: your refund is on its way")
    wait_text(page, "Done: your refund is on its way")
    assert page.locator(f"{WIDGET} .survey").count() == 0
    resolved = http.patch(f"/api/conversations/{conversation_id}", headers=tenant.operator, json={"resolved": True})
    assert resolved.status_code == 200, resolved.text
    prompt = page.get_by_role("group", name="How did we do?")
    prompt.wait_for()
    assert [b.text_content() for b in prompt.get_by_role("button").all()] == ["🙁Bad", "😐Okay", "🙂Great"]
    assert_accessible(page, axe_script, "the satisfaction prompt")
    screenshot(page, "widget-satisfaction")
    prompt.get_by_role("button", name="Great").click()
    page.locator(f"{WIDGET} .survey.thanks").wait_for()
    stored = lambda mid: http.get(f"/api/messages/{mid}", headers=tenant.operator).json()["rating"]
    eventually(lambda: stored(last["_id"]) == "happy")
    assert stored(first["_id"]) is None


def test_a_send_while_the_server_is_down_shows_retry_and_goes_through_when_back(page, host_pages, restartable):
    server, port = restartable
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "down", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Before the outage"], ["openChat"]]))
    wait_text(page, "Before the outage")
    server.stop()
    page.locator(f"{WIDGET} .offline").wait_for()
    page.locator(f"{WIDGET} textarea").fill("Sent while down")
    page.locator(f"{WIDGET} textarea").press("Enter")
    retry = page.locator(f"{WIDGET} .failed").get_by_role("button", name="Retry")
    retry.wait_for()
    screenshot(page, "widget-retry")
    server.start("--port", port)
    wait_text(page, "Sent while down")  # sent again once the connection is back
    assert page.locator(f"{WIDGET} .failed").count() == 0
    with server.client() as http:
        texts = [m["content"] for m in http.get("/api/messages", headers=tenant.operator,
                                                 params={"conversationId": the_conversation(http, tenant)["_id"]}).json()]
    assert texts == ["Before the outage", "Sent while down"]


def test_page_events_reach_the_host_page(page, host_pages, server, http):
    tenant = make_tenant(server)
    listen = ("window.seen = []; const log = (name) => (detail) => window.seen.push([name, detail.content ?? detail.unread ?? null]);"
              "window.$parley.push(" + ",".join(
                  f"['on', '{name}', log('{name}')]" for name in
                  ("message:received", "message:sent", "chat:opened", "chat:closed", "unread:changed")) + ");"
              "window.quiet = log('ignored'); window.$parley.push(['on', 'message:received', window.quiet],"
              " ['off', 'message:received', window.quiet]);")
    page.goto(host_page(host_pages, "events", server.base_url, tenant.website_id))
    page.locator(f"{WIDGET} .launcher").wait_for()
    page.evaluate(listen)
    page.evaluate("window.$parley.push(['openChat'], ['sendMessage', 'Hi there'], ['closeChat'])")
    wait_text(page, "Hi there")
    reply(http, tenant, the_conversation(http, tenant)["_id"], "Hello!")
    eventually(lambda: ["message:received", "Hello!"] in page.evaluate("window.seen"))
    seen = page.evaluate("window.seen")
    assert seen[:3] == [["chat:opened", None], ["message:sent", "Hi there"], ["chat:closed", None]], seen
    assert ["unread:changed", 1] in seen and not any(name == "ignored" for name, _ in seen)


def test_the_preview_on_the_websites_page_is_the_widget(context, server, http, host_pages, axe_script):
    tenant = make_tenant(server)
    dashboard = Dashboard(context, server, tenant)
    page = dashboard.sign_in().page
    page.click("nav >> text=Websites")
    card = page.locator(f"section[data-website='{tenant.website_name}']")
    card.get_by_label("Title").fill("Preview & Co")
    card.get_by_label("Welcome message").fill("We answer fast.")
    card.get_by_label("Brand color").first.fill("#0f766e")
    frame = page.frame_locator(f"section[data-website='{tenant.website_name}'] iframe[data-surface=widget]")
    mascot = page.frame_locator(f"section[data-website='{tenant.website_name}'] iframe[data-surface=mascot]")
    eventually(lambda: frame.locator(f"{WIDGET} .head h2").text_content() == "Preview & Co")
    eventually(lambda: mascot.locator("[data-parley=mascot] .head h2").text_content() == "Preview & Co")
    preview = {"title": frame.locator(f"{WIDGET} .head h2").text_content(),
               "background": frame.locator(f"{WIDGET} .head").evaluate("e => getComputedStyle(e).backgroundColor"),
               "welcome": frame.locator(f"{WIDGET} .empty").text_content()}
    assert preview == {"title": "Preview & Co", "background": "rgb(15, 118, 110)", "welcome": "We answer fast."}
    assert mascot.locator("[data-parley=mascot] .head").evaluate("e => getComputedStyle(e).backgroundColor") == \
        "rgb(15, 118, 110)"
    assert_accessible(page, axe_script, "the websites page with the widget's preview")
    card.locator(".widget-editor").scroll_into_view_if_needed()
    screenshot(page, "websites-widget-preview")
    card.get_by_role("button", name="Save widget").click()
    card.locator("text=Visitors see it at their next page load").wait_for()
    at_the_dashboard(http, tenant)

    visitor = context.new_page()
    visitor.goto(host_page(host_pages, "previewed", server.base_url, tenant.website_id, queued=[["openChat"]]))
    eventually(lambda: visitor.get_by_role("dialog", name="Preview & Co").is_visible())
    real = {"title": visitor.locator(f"{WIDGET} .head h2").text_content(),
            "background": visitor.locator(f"{WIDGET} .head").evaluate("e => getComputedStyle(e).backgroundColor"),
            "welcome": visitor.locator(f"{WIDGET} .empty").text_content()}
    assert real == preview
    dashboard.assert_clean()


def test_seen_timestamps_and_the_visitors_typing_reach_each_side(page, host_pages, server, http):
    tenant = make_tenant(server)
    page.goto(host_page(host_pages, "seen", server.base_url, tenant.website_id, queued=[
        ["sendMessage", "Anyone there?"], ["openChat"]]))
    wait_text(page, "Anyone there?")
    mine = page.locator(f"{WIDGET} .msg.mine")
    stamp = mine.locator("time.when")
    assert stamp.text_content() == "now" and stamp.get_attribute("title")  # relative, the exact time on hover
    assert mine.locator(".seen").count() == 0
    conversation_id = the_conversation(http, tenant)["_id"]
    [message] = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id}).json()
    assert http.post(f"/api/messages/{message['_id']}/read", headers=tenant.operator).status_code == 200
    mine.locator(".seen", has_text="Seen").wait_for()
    with EventStream(server.base_url, "/api/realtime", tenant.operator) as stream:
        page.locator(f"{WIDGET} textarea").press_sequentially("I am wri")
        typing = stream.until(lambda p: p.event == "visitor.typing")[-1]
        assert typing.data == {"conversationId": conversation_id, "typing": True}


def test_the_away_message_shows_while_nobody_of_the_team_is_online(page, host_pages, server, http):
    tenant = make_tenant(server)
    configure(http, tenant, awayMessage="Back at 9 tomorrow.", welcomeMessage="Hi, we are here.")
    page.goto(host_page(host_pages, "away", server.base_url, tenant.website_id, queued=[["openChat"]]))
    page.locator(f"{WIDGET} .empty.away", has_text="Back at 9 tomorrow.").wait_for()
    at_the_dashboard(http, tenant)
    page.reload()
    page.locator(f"{WIDGET} .empty", has_text="Hi, we are here.").wait_for()


def test_outside_business_hours_the_visitor_sees_when_the_team_is_back_and_leaves_an_address(
        page, host_pages, server, http, axe_script):
    """Closed all week but one hour on a day not today (operators online all the same): the widget is away,
    says when the team is back, and takes the visitor's address as their unverified contact."""
    tenant = make_tenant(server)
    at_the_dashboard(http, tenant)
    today = datetime.now(timezone.utc).strftime("%a").lower()[:3]
    other = next(day for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun") if day != today)
    hours = http.put(f"/api/websites/{tenant.website_name}/hours", headers=tenant.operator,
                     json={"timezone": "UTC", "weekly": {other: [["09:00", "10:00"]]}, "holidays": []})
    assert hours.status_code == 200, hours.text
    config = http.get("/api/chat/config", params={"websiteId": str(tenant.website_id)}).json()
    assert config["open"] is False and config["nextOpenAt"]
    page.goto(host_page(host_pages, "closed", server.base_url, tenant.website_id, queued=[["openChat"]]))
    page.locator(f"{WIDGET} .away-box .opens").wait_for()
    assert_accessible(page, axe_script, WIDGET)
    page.locator(f"{WIDGET} .contact input").fill("night.owl@example.com")
    page.locator(f"{WIDGET} .contact button").click()
    page.locator(f"{WIDGET} .contact-saved", has_text="night.owl@example.com").wait_for()
    customer_id = stored_session(page, tenant.website_id)["customerId"]
    customer = eventually(lambda: (c := http.get(f"/api/customers/{customer_id}", headers=tenant.operator).json())
                          .get("unverifiedEmail") and c)
    assert customer["unverifiedEmail"] == "night.owl@example.com" and customer["email"] is None
