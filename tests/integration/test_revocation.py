"""What a revocation ends, tested with the attacker's requests: an operator removed from an organization
keeps no REST access to it, and an open stream (`GET /api/realtime`, `GET /api/events?follow=true`) ends
within seconds of its credential's revocation."""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid

import httpx

from commands import admin
from tests.support.mcp_helpers import PASSWORD, login_code
from tests.support.servers import make_tenant, token
from tests.support.visitors import EventStream, visitor_with_conversation

ENDS_WITHIN = 8.0  # seconds: the streams re-check their credential every two


def run_admin(server, command, *args):
    store = server.store()
    try:
        done = command(store, *args)
    finally:
        store.close()
    server.wait_projected(done.position)
    return done


def logged_in_to(http: httpx.Client, base: str, email: str, org_id) -> dict[str, str]:
    exchanged = http.post("/oauth/token", data=login_code(http, base, email, org_id))
    assert exchanged.status_code == 200, exchanged.text
    return token(exchanged.json()["access_token"])


def joined(server, tenant):
    """Another organization, which the tenant's operator joined (`parley admin operator add-org`)."""
    other = make_tenant(server)
    run_admin(server, admin.add_operator_org, tenant.operator_email, other.org_id)
    return other


def attempts(http: httpx.Client, headers: dict[str, str], org) -> dict[str, int]:
    """Reading and writing in the organization, and creating an API key there: the status of each."""
    return {
        "read": http.get("/api/websites", headers=headers).status_code,
        "write": http.post("/api/customers", headers=headers, json={"websiteId": str(org.website_id)}).status_code,
        "api key": http.post("/api/apikeys", headers=headers, json={"scopes": ["websites:read"]}).status_code,
    }


def test_an_operator_removed_from_an_organization_keeps_no_rest_access_to_it(server, http, tenant):
    other = joined(server, tenant)
    there = logged_in_to(http, server.base_url, tenant.operator_email, other.org_id)
    websites = http.get("/api/websites", headers=there)
    assert [w["_id"] for w in websites.json()] == [str(other.website_id)]

    run_admin(server, admin.remove_operator_org, tenant.operator_email, other.org_id)
    assert attempts(http, there, other) == {"read": 401, "write": 401, "api key": 401}
    assert http.get("/api/websites", headers=tenant.operator).status_code == 200  # the own organization stays

    # joining again gives the old token nothing back
    run_admin(server, admin.add_operator_org, tenant.operator_email, other.org_id)
    assert http.get("/api/websites", headers=there).status_code == 401


def test_a_login_allowed_before_the_removal_opens_nothing_after_it(server, http, tenant):
    """The code was granted while the operator belonged to the organization and exchanged after the
    membership ended: whatever token it gives, it opens nothing there."""
    other = joined(server, tenant)
    form = login_code(http, server.base_url, tenant.operator_email, other.org_id)
    run_admin(server, admin.remove_operator_org, tenant.operator_email, other.org_id)
    exchanged = http.post("/oauth/token", data=form)
    if exchanged.status_code == 200:
        assert attempts(http, token(exchanged.json()["access_token"]), other) == {
            "read": 401, "write": 401, "api key": 401}


# --- open streams end with their credential


def ended(stream: EventStream, within: float = ENDS_WITHIN) -> list:
    """Waits for the stream's end; what it pushed meanwhile."""
    deadline, pushed = time.monotonic() + within, []
    while True:
        try:
            item = stream.events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"the stream was still open {within} s after the revocation") from None
        if item is None:
            return pushed
        pushed.append(item)


def signed_in(http: httpx.Client, tenant) -> dict[str, str]:
    answer = http.post("/api/operators/sessions", json={"email": tenant.operator_email, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return token(answer.json()["token"])


def a_message(http: httpx.Client, tenant) -> str:
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    sent = http.post("/api/chat/messages", headers=visitor.headers,
                     json={"conversationId": conversation_id, "content": "after the revocation"})
    assert sent.status_code == 200, sent.text
    return sent.json()["_id"]


def test_signing_out_ends_the_realtime_stream_it_opened(server, http, tenant):
    session = signed_in(http, tenant)
    with EventStream(server.base_url, "/api/realtime", session) as stream, \
            EventStream(server.base_url, "/api/realtime", tenant.operator) as other_session:
        first = a_message(http, tenant)
        stream.until(lambda p: p.event == "message.created" and p.data["_id"] == first)
        assert http.delete("/api/operators/sessions/current", headers=session).status_code == 200
        ended(stream)
        later = a_message(http, tenant)
        assert stream.events.empty()  # the message posted after the revocation never reached it
        # the operator's other session is not touched
        other_session.until(lambda p: p.event == "message.created" and p.data["_id"] == later)


def test_revoking_the_operators_sessions_ends_their_realtime_streams(server, http, tenant):
    with EventStream(server.base_url, "/api/realtime", signed_in(http, tenant)) as stream:
        run_admin(server, admin.revoke_operator_sessions, tenant.operator_email)
        ended(stream)


def test_removing_the_operator_from_an_organization_ends_their_realtime_stream_there(server, http, tenant):
    other = joined(server, tenant)
    there = logged_in_to(http, server.base_url, tenant.operator_email, other.org_id)
    with EventStream(server.base_url, "/api/realtime", there) as stream, \
            EventStream(server.base_url, "/api/realtime", tenant.operator) as at_home:
        run_admin(server, admin.remove_operator_org, tenant.operator_email, other.org_id)
        ended(stream)
        a_message(http, other)
        mine = a_message(http, tenant)
        at_home.until(lambda p: p.event == "message.created" and p.data["_id"] == mine)


def test_disabling_an_operator_ends_their_realtime_stream(server, http, tenant):
    store = server.store()
    try:
        email = f"colleague-{uuid.uuid4().hex[:8]}@example.com"
        colleague, colleague_token = admin.create_operator(store, tenant.org_id, email, PASSWORD, "agent")
    finally:
        store.close()
    server.wait_projected(colleague.position)
    with EventStream(server.base_url, "/api/realtime", token(colleague_token)) as stream:
        disabled = http.patch(f"/api/operators/{colleague.id}", headers=tenant.operator, json={"status": "disabled"})
        assert disabled.status_code == 200, disabled.text
        ended(stream)


class Following:
    """`GET /api/events?follow=true` read on a thread, a line at a time; None once it ends."""

    def __init__(self, base_url: str, headers: dict[str, str], after: int):
        self.lines: queue.Queue[dict | None] = queue.Queue()
        self.opened = threading.Event()
        self.client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(30, read=None))
        threading.Thread(target=self._read, args=(headers, after), daemon=True).start()
        assert self.opened.wait(30), "the follow did not open"

    def _read(self, headers: dict[str, str], after: int) -> None:
        try:
            with self.client.stream("GET", "/api/events", headers=headers,
                                    params={"follow": "true", "after": after}) as response:
                assert response.status_code == 200, response.read()
                self.opened.set()
                for line in response.iter_lines():
                    if line:
                        self.lines.put(json.loads(line))
        except httpx.HTTPError:
            pass
        finally:
            self.opened.set()
            self.lines.put(None)

    def until_end(self, within: float) -> list[dict]:
        deadline, seen = time.monotonic() + within, []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the follow was still open {within} s after the revocation") from None
            if line is None:
                return seen
            seen.append(line)


def test_deleting_an_api_key_ends_the_event_follow_it_opened(server, http, tenant):
    key_id, key = tenant.new_key("events:read")
    head = http.get("/api/events", headers=key).text.strip().splitlines()[-1]
    following = Following(server.base_url, key, json.loads(head)["trailer"]["lastPosition"])
    try:
        first = a_message(http, tenant)
        line = following.lines.get(timeout=30)
        while line is not None and line.get("data", {}).get("messageId") != first:
            line = following.lines.get(timeout=30)
        assert line is not None, "the follow ended before the revocation"
        assert http.delete(f"/api/apikeys/{key_id}", headers=tenant.operator).status_code == 200
        following.until_end(ENDS_WITHIN)
        a_message(http, tenant)
        assert following.lines.empty()
    finally:
        following.client.close()
