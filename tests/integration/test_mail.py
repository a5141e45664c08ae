"""E-mail with real SMTP on both sides: an aiosmtpd server on the loopback receives what Parley sends (the
team's reply to a visitor who left, operators' digests, invitations, password resets), and Parley's own SMTP
listener receives a visitor's reply sent with smtplib, which lands in the conversation; a tampered token or a
forged In-Reply-To lands nowhere."""

from __future__ import annotations

import re
import smtplib
import time
import uuid
from email.message import EmailMessage
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from tests.support.servers import Server, make_tenant
from tests.support.smtp import Received, SmtpInbox
from tests.support.visitors import Chatting, EventStream, sign, start_session

REPLY_TO = re.compile(r"reply\+([a-z2-7]+)@mail\.test")


def identified_chat(http: httpx.Client, tenant, email: str) -> Chatting:
    """A visitor whose website vouched for their e-mail address, in a conversation."""
    chatting = Chatting.__new__(Chatting)
    chatting.http = http
    chatting.visitor = start_session(http, tenant.website_id, email=email,
                                     emailSignature=sign(tenant.identity_secret, email))
    chatting.headers = chatting.visitor.headers
    response = http.post("/api/chat/conversations", headers=chatting.headers)
    assert response.status_code == 200, response.text
    chatting.conversation_id = response.json()["_id"]
    return chatting


def messages_of(http: httpx.Client, tenant, conversation_id: str) -> list[dict]:
    response = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id})
    assert response.status_code == 200, response.text
    return response.json()


def send_reply(server: Server, to: str, body: str, **headers: str) -> None:
    host, port = server.env["PARLEY_SMTP_INBOUND"].rsplit(":", 1)
    message = EmailMessage()
    message["From"] = "visitor@example.org"
    message["To"] = to
    message["Subject"] = "Re: New reply"
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    with smtplib.SMTP(host, int(port), timeout=10) as smtp:
        smtp.send_message(message)


def wait_until(check, timeout: float = 20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def one_to(inbox: SmtpInbox, address: str) -> Received:
    inbox.wait_for(lambda messages: any(address in m.recipients for m in messages))
    return inbox.to(address)[-1]


def test_the_teams_reply_is_mailed_and_the_visitors_mailed_answer_lands_in_the_conversation(
        mail_server, smtp_inbox):
    tenant = make_tenant(mail_server)
    address = f"visitor-{uuid.uuid4().hex[:6]}@example.org"
    with mail_server.client() as http:
        chatting = identified_chat(http, tenant, address)
        chatting.say("Hello, is anyone there?")
        note = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chatting.conversation_id, "from": "operator", "internal": True,
            "content": "internal: refund is risky"})
        assert note.status_code == 200, note.text
        reply = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chatting.conversation_id, "from": "operator", "content": "Yes! <b>Here</b> to help"})
        assert reply.status_code == 200, reply.text

        mailed = one_to(smtp_inbox, address)
        text, html = mailed.part("plain"), mailed.part("html")
        assert "Yes! <b>Here</b> to help" in text and "Hello, is anyone there?" in text
        assert "Yes! &lt;b&gt;Here&lt;/b&gt; to help" in html and "<b>Here</b>" not in html
        assert "refund is risky" not in mailed.raw.decode()  # never an internal note
        assert tenant.website_name in html and "#123456" in html  # the website's name and brand colour
        assert mailed.message["From"].addresses[0].addr_spec == "support@parley.test"
        reply_to = mailed.message["Reply-To"].addresses[0].addr_spec
        assert REPLY_TO.fullmatch(reply_to)
        unsubscribe = mailed.message["List-Unsubscribe"].strip("<>")
        assert "/api/mail/unsubscribe/" in unsubscribe

        # the visitor answers from their mail client, quoting the mail and signing it
        send_reply(mail_server, reply_to, "Thanks, that works!\n\n-- \nAda\n\nOn Tue, 1 Dec 2026, Support wrote:\n"
                   "> Yes! Here to help", In_Reply_To=mailed.message["Message-ID"])
        landed = wait_until(lambda: [m for m in messages_of(http, tenant, chatting.conversation_id)
                                     if m["from"] == "customer" and m["content"].startswith("Thanks")])
        assert landed[0]["content"] == "Thanks, that works!"
        before = messages_of(http, tenant, chatting.conversation_id)

        # a tampered token, and a forged In-Reply-To to a plain address: refused, nothing lands
        token = REPLY_TO.fullmatch(reply_to).group(1)
        tampered = f"reply+{token[:-1]}{'a' if token[-1] != 'a' else 'b'}@mail.test"
        for forged_to, headers in ((tampered, {}), ("support@mail.test", {"In_Reply_To": mailed.message["Message-ID"]})):
            with pytest.raises(smtplib.SMTPRecipientsRefused):
                send_reply(mail_server, forged_to, "Let me in", **headers)
        # over HTTP too, as a provider would post it
        raw = (f"From: visitor@example.org\r\nTo: {tampered}\r\nIn-Reply-To: {mailed.message['Message-ID']}\r\n"
               f"Subject: Re\r\n\r\nLet me in\r\n").encode()
        posted = http.post("/api/mail/inbound", content=raw, headers={
            "Content-Type": "message/rfc822", "Authorization": "Bearer inbound-secret"})
        assert posted.status_code == 422 and posted.headers["content-type"] == "application/problem+json"
        assert http.post("/api/mail/inbound", content=raw, headers={
            "Content-Type": "message/rfc822", "Authorization": "Bearer wrong"}).status_code == 401
        time.sleep(1)
        assert messages_of(http, tenant, chatting.conversation_id) == before
        log = "".join(mail_server.output)
        assert "refused at RCPT" in log and "landed nowhere" in log

        # the HTTP route takes a good one
        good = raw.replace(tampered.encode(), reply_to.encode()).replace(b"Let me in", b"Sent through the provider")
        posted = http.post("/api/mail/inbound", content=good, headers={
            "Content-Type": "message/rfc822", "Authorization": "Bearer inbound-secret"})
        assert posted.status_code == 201, posted.text
        assert any(m["content"] == "Sent through the provider" and m["from"] == "customer"
                   for m in messages_of(http, tenant, chatting.conversation_id))

        # the unsubscribe link works: no more replies by mail for this visitor
        path = urlsplit(unsubscribe).path
        assert http.get(path).status_code == 200  # a page with the button: a link checker changes nothing
        assert http.post(path).status_code == 200
        assert http.post(path[:-2] + "xx").status_code == 400  # a structured error, nothing changed
        time.sleep(0.5)
        http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chatting.conversation_id, "from": "operator", "content": "Anything else?"})
        visitor = f"customer:{chatting.visitor.customer_id}"
        with psycopg.connect(mail_server.database_url, autocommit=True) as conn:
            skipped = wait_until(lambda: conn.execute(
                "SELECT error FROM mail_outbox WHERE recipient = %s AND status = 'skipped'", (visitor,)).fetchall())
        assert skipped == [("the visitor unsubscribed",)]
        assert len(smtp_inbox.to(address)) == 1


def test_fifty_visitor_messages_for_an_offline_team_make_one_digest_per_operator_per_window(mail_server, smtp_inbox):
    tenant = make_tenant(mail_server)
    team = [tenant.operator_email, tenant.add_operator("agent").email, tenant.add_operator("admin").email]
    with mail_server.client() as http:
        visitors = [Chatting(http, tenant) for _ in range(5)]
        started = time.monotonic()
        for index in range(50):  # five seconds or more: a few digest windows of two seconds
            visitors[index % 5].say(f"message {index}")
            time.sleep(0.1)
        most_windows = int((time.monotonic() - started) // 2) + 2
    with psycopg.connect(mail_server.database_url, autocommit=True) as conn:
        windows = {email: wait_until(lambda: conn.execute(
            "SELECT count(DISTINCT i.source) FROM mail_digest_items i JOIN mail_outbox o "
            "ON o.recipient = i.recipient AND o.source = i.source WHERE o.org_id = %s AND i.recipient = "
            "'operator:' || (SELECT id FROM rm_operators WHERE email = %s)", (tenant.org_id, email)).fetchone()[0])
            for email in team}
    for email in team:
        smtp_inbox.wait_for(lambda _: len(smtp_inbox.to(email)) >= windows[email])
    time.sleep(3)  # a further window: nothing more comes
    for email in team:
        digests = smtp_inbox.to(email)
        assert len(digests) == windows[email] <= most_windows, (email, len(digests), windows[email], most_windows)
        counted = sum(int(n) for d in digests for n in re.findall(r"(\d+) new messages?", d.part("plain")))
        assert counted == 50
        assert "message 49" in digests[-1].part("plain") or "message 4" in digests[-1].part("plain")
        assert "/api/mail/unsubscribe/" in digests[0].message["List-Unsubscribe"]


def test_invitations_and_password_resets_are_mailed(mail_server, smtp_inbox):
    tenant = make_tenant(mail_server)
    invited = f"new-{uuid.uuid4().hex[:6]}@example.com"
    with mail_server.client() as http:
        issued = http.post("/api/operators/invitations", headers=tenant.operator,
                           json={"email": invited, "role": "agent"})
        assert issued.status_code == 201 and issued.json()["mailed"] is True
        invitation = one_to(smtp_inbox, invited)
        assert issued.json()["url"] in invitation.part("plain")
        assert "Accept the invitation" in invitation.part("html")

        assert http.post("/api/password-resets", json={"email": tenant.operator_email}).status_code == 202
        assert http.post("/api/password-resets", json={"email": "nobody-here@example.com"}).status_code == 202
        reset = one_to(smtp_inbox, tenant.operator_email)
        url = re.search(r"https?://\S+/app/#/reset/(\S+)", reset.part("plain"))
        assert url, reset.part("plain")
        used = http.post(f"/api/password-resets/{url.group(1)}", json={"password": "a brand new passphrase"})
        assert used.status_code == 200, used.text
        signed_in = http.post("/api/operators/sessions", json={"email": tenant.operator_email,
                                                             "password": "a brand new passphrase"})
        assert signed_in.status_code == 200, signed_in.text
    time.sleep(1)
    assert smtp_inbox.to("nobody-here@example.com") == []


def outbox_rows(server: Server, recipient: str) -> list[tuple[str, str | None]]:
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        return conn.execute("SELECT status, error FROM mail_outbox WHERE recipient = %s ORDER BY created_at",
                            (recipient,)).fetchall()


def test_no_mail_while_the_visitor_is_on_the_page_and_a_mention_tells_only_where(mail_server, smtp_inbox):
    tenant = make_tenant(mail_server)
    colleague = tenant.add_operator("agent")
    address = f"present-{uuid.uuid4().hex[:6]}@example.org"
    with mail_server.client() as http:
        chatting = identified_chat(http, tenant, address)
        chatting.say("I am right here")
        with EventStream(mail_server.base_url, "/api/chat/realtime", chatting.headers):
            time.sleep(0.5)  # the stream's presence is recorded as it opens
            http.post("/api/messages", headers=tenant.operator, json={
                "conversationId": chatting.conversation_id, "from": "operator", "content": "Hello, on the page"})
            http.post("/api/messages", headers=tenant.operator, json={
                "conversationId": chatting.conversation_id, "from": "operator", "internal": True,
                "content": f"@{colleague.email} can you take this? the password is hunter2"})
            rows = wait_until(lambda: [r for r in outbox_rows(mail_server, f"customer:{chatting.visitor.customer_id}")
                                       if r[0] != "pending"], timeout=30)
        assert rows == [("skipped", "the visitor is on the page")]
        digest = one_to(smtp_inbox, colleague.email)
        text = digest.part("plain")
        assert "you were mentioned" in text and chatting.conversation_id in text
        assert "hunter2" not in digest.raw.decode()  # a note's text never leaves in a mail
    assert smtp_inbox.to(address) == []


def test_an_unverified_address_gets_the_teams_reply_and_a_mention_honours_the_email_channel(
        mail_server, smtp_inbox):
    """The visitor's own unverified address (`PUT /api/chat/profile {email}`) is where the team's reply goes;
    an operator who turned e-mail off for mentions (`PUT /api/operators/me/notifications`) gets no digest."""
    tenant = make_tenant(mail_server)
    colleague = tenant.add_operator("agent")
    address = f"unverified-{uuid.uuid4().hex[:6]}@example.org"
    with mail_server.client() as http:
        chatting = Chatting(http, tenant)
        saved = http.put("/api/chat/profile", headers=chatting.headers, json={"email": address})
        assert saved.status_code == 200, saved.text
        turned_off = http.put("/api/operators/me/notifications", headers=colleague.headers,
                              json={"mention": {"dashboard": True, "desktop": True, "email": False}})
        assert turned_off.status_code == 200, turned_off.text
        chatting.say("Are you there?")
        http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chatting.conversation_id, "from": "operator", "content": "Yes, here is the answer"})
        http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chatting.conversation_id, "from": "operator", "internal": True,
            "content": f"@{colleague.email} have a look"})
        assert "Yes, here is the answer" in one_to(smtp_inbox, address).part("plain")
        wait_until(lambda: (rows := outbox_rows(mail_server, f"operator:{colleague.id}"))
                   and all(status != "pending" for status, _ in rows), timeout=30)
    mailed = [m.part("plain") for m in smtp_inbox.to(colleague.email)]
    assert not any("you were mentioned" in text for text in mailed), mailed  # the new conversation may be there
