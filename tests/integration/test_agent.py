"""The bring-your-own AI agent: a website's AG-UI agent called for its visitors' messages, its answer
streamed into the conversation, against a real AG-UI agent (pydantic-ai's adapter) on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.agui_agent import AGUIAgent, answering, call_tool, later, open_cart_then_report, raw_stream, say, words
from commands.agent import agent_stream
from tests.support.servers import make_server, make_tenant
from tests.support.visitors import EventStream, sign, start_session, visitor_with_conversation

AGENT_ENV = dict(PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_AGENT_FIRST_EVENT_SECONDS="3",
                 PARLEY_AGENT_IDLE_SECONDS="2.5", PARLEY_AGENT_RUN_SECONDS="8", PARLEY_AGENT_RETRY_ATTEMPTS="3",
                 PARLEY_AGENT_RETRY_BASE_SECONDS="0.05")


@pytest.fixture(scope="module")
def agents(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("agents"), **AGENT_ENV).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def ac(agents):
    with agents.client() as client:
        yield client


@pytest.fixture
def site(agents):
    return make_tenant(agents)


@pytest.fixture
def remote():
    agent = AGUIAgent().start()
    yield agent
    agent.stop()


def configure(client, tenant, url: str, **extra) -> dict:
    response = client.put(f"/api/websites/{tenant.website_name}/agent", headers=tenant.operator,
                          json={"url": url, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def eventually(check, timeout: float = 20.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen in {timeout} s")
        time.sleep(0.05)


def ask(client, visitor, conversation_id, content: str) -> dict:
    response = client.post("/api/chat/messages", headers=visitor.headers,
                           json={"conversationId": conversation_id, "content": content})
    assert response.status_code == 200, response.text
    return response.json()


def agent_for(client, tenant, remote: AGUIAgent, answer=None, **extra) -> dict:
    created = configure(client, tenant, remote.url, **extra)
    remote.bearer = created["secret"]
    if answer is not None:
        remote.answer = answer
    return created


def status(client, tenant) -> dict:
    response = client.get(f"/api/websites/{tenant.website_name}/agent", headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()["status"]


def conversation(client, tenant, conversation_id) -> dict:
    response = client.get(f"/api/conversations/{conversation_id}", headers=tenant.operator)
    assert response.status_code == 200, response.text
    return response.json()


def transcript(client, visitor, conversation_id) -> list[dict]:
    response = client.get("/api/chat/messages", headers=visitor.headers, params={"conversationId": conversation_id})
    assert response.status_code == 200, response.text
    return response.json()


def agent_replies(client, visitor, conversation_id) -> list[dict]:
    return [m for m in transcript(client, visitor, conversation_id) if m["author"] == "agent"]


def test_a_streamed_answer_arrives_delta_by_delta_and_is_stored_once(ac, agents, site, remote):
    created = configure(ac, site, remote.url)
    remote.bearer = created["secret"]
    remote.answer = say("Hello ", "there, ", "friend.", pause=0.05)
    visitor, conversation_id = visitor_with_conversation(ac, site)
    with EventStream(agents.base_url, "/api/chat/realtime", visitor.headers) as stream:
        question = ac.post("/api/chat/messages", headers=visitor.headers,
                           json={"conversationId": conversation_id, "content": "Hi, anyone?"}).json()
        pushed = stream.until(lambda p: p.event == "message.created" and p.data["author"] == "agent")
    deltas = [p for p in pushed if p.event == "message.delta"]
    assert [d.data["delta"] for d in deltas] == ["Hello ", "there, ", "friend."]
    stored = pushed[-1].data
    assert {d.data["messageId"] for d in deltas} == {stored["_id"]}
    assert all(d.id == 0 for d in deltas)  # live frames: not in the log
    assert stored["content"] == "Hello there, friend." and stored["from"] == "operator"
    assert stored["replyToMessageId"] == question["_id"] and stored["incomplete"] is False
    assert [p.data["typing"] for p in pushed if p.event == "agent.typing"][:1] == [True]
    replies = eventually(lambda: agent_replies(ac, visitor, conversation_id))
    assert [r["_id"] for r in replies] == [stored["_id"]]
    body = remote.requests[0].body
    assert body["threadId"] == conversation_id and body["state"] == {}
    assert [(m["id"], m["role"], m["content"]) for m in body["messages"]] == [(question["_id"], "user", "Hi, anyone?")]
    assert body["forwardedProps"] == {"websiteId": str(site.website_id), "conversationId": conversation_id,
                                      "customerId": visitor.customer_id}
    assert remote.requests[0].authorization == f"Bearer {created['secret']}"


# --- configuring it

def test_configuring_shows_the_secret_once_and_every_change_is_an_event(ac, agents, site):
    other_tenant = make_tenant(agents)
    path = f"/api/websites/{site.website_name}/agent"
    assert ac.get(path, headers=site.operator).status_code == 404
    first = configure(ac, site, "http://127.0.0.1:9/agent", greeting="Hi! I am the bot.")
    assert first["secret"].startswith("agsec_") and first["enabled"] is True
    assert first["greeting"] == "Hi! I am the bot." and first["fallbackMessage"] is None
    assert first["status"] == {"lastRunAt": None, "lastOutcome": None, "lastErrorClass": None, "lastError": None,
                               "lastErrorAt": None}
    shown = ac.get(path, headers=site.operator).json()
    assert "secret" not in shown and first["secret"] not in str(shown)
    again = configure(ac, site, "http://127.0.0.1:9/other", enabled=False, fallbackMessage="Back soon")
    assert "secret" not in again and (again["url"], again["enabled"]) == ("http://127.0.0.1:9/other", False)
    rotated = ac.post(f"{path}/secret", headers=site.operator)
    assert rotated.status_code == 200 and rotated.json()["secret"] not in (first["secret"], None)
    # another organization's operator, a visitor, nobody: the website is not theirs to see
    assert ac.get(path, headers=other_tenant.operator).status_code == 404
    assert ac.put(path, headers=other_tenant.operator, json={"url": "http://127.0.0.1:9/x"}).status_code == 404
    assert ac.get(path).status_code == 401
    assert ac.delete(path, headers=site.operator).json() == {"websiteId": str(site.website_id), "deleted": True}
    assert ac.get(path, headers=site.operator).status_code == 404
    assert ac.post(f"{path}/secret", headers=site.operator).status_code == 404
    store = agents.store()
    try:
        kinds = [type(r.event).__name__ for r in store.load(agent_stream(site.website_id))]
    finally:
        store.close()
    assert kinds == ["AgentConfigured", "AgentSecretSet", "AgentConfigured", "AgentSecretSet", "AgentRemoved"]


@pytest.mark.parametrize("body, field", [
    ({"url": "ftp://example.com/agent"}, "url"),
    ({"url": "http://user:pw@127.0.0.1/agent"}, "url"),
    ({"url": "http://127.0.0.1/agent", "enabled": "yes"}, "$.enabled"),
    ({"url": "http://127.0.0.1/agent", "secret": "mine"}, "`secret`"),
    ({"url": "http://127.0.0.1/agent", "greeting": ""}, "$.greeting"),
])
def test_bad_settings_are_refused_and_nothing_is_stored(ac, site, body, field):
    path = f"/api/websites/{site.website_name}/agent"
    response = ac.put(path, headers=site.operator, json=body)
    assert response.status_code == 400 and response.headers["content-type"] == "application/problem+json"
    assert field in response.text
    assert ac.get(path, headers=site.operator).status_code == 404


def test_the_admin_command_configures_an_agent(agents, site):
    import json
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "parley.cli", "admin", "website", "agent", "--data-dir", str(agents.data_dir),
         "--website", str(site.website_id), "--url", "http://127.0.0.1:9/agent"],
        env=agents.env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["websiteId"] == str(site.website_id) and printed["secret"].startswith("agsec_")
    refused = subprocess.run(
        [sys.executable, "-m", "parley.cli", "admin", "website", "agent", "--data-dir", str(agents.data_dir),
         "--website", str(site.website_id), "--url", "gopher://x"], env=agents.env, capture_output=True, text=True,
        timeout=120)
    assert refused.returncode == 2 and json.loads(refused.stderr)["field"] == "url"


# --- failures

def handed_off(client, tenant, visitor, conversation_id, error_class: str) -> list[dict]:
    """Waits for the hand-off, checks what the visitor and the operators see, returns the transcript."""
    eventually(lambda: conversation(client, tenant, conversation_id)["agentPaused"], what="the hand-off")
    messages = eventually(lambda: [m for m in transcript(client, visitor, conversation_id)
                                   if m["author"] == "agent" and not m["incomplete"]], what="the fallback")
    assert messages[-1]["content"] == "A teammate will reply shortly"
    found = status(client, tenant)
    assert found["lastOutcome"] == "failed" and found["lastErrorClass"] == error_class, found
    unread = client.get("/api/conversations", headers=tenant.operator, params={
        "websiteId": str(tenant.website_id), "inboxFilter": "unread"}).json()["conversations"]
    assert conversation_id in [c["_id"] for c in unread]
    return transcript(client, visitor, conversation_id)


def test_run_error_mid_answer_keeps_the_partial_answer_and_hands_off(ac, agents, site, remote):
    async def breaks(messages, info):
        yield "Let me check"
        await asyncio.sleep(0.05)
        raise RuntimeError("the model fell over")

    agent_for(ac, site, remote, breaks)
    visitor, conversation_id = visitor_with_conversation(ac, site)
    with EventStream(agents.base_url, "/api/realtime", site.operator) as operators:
        question = ask(ac, visitor, conversation_id, "Where is my order?")
        change = operators.until(lambda p: p.event == "conversation.updated").pop()
    assert change.data["agentPaused"] is True and change.data["handoff"] is True
    assert "run_error" in change.data["agentPauseReason"]
    messages = handed_off(ac, site, visitor, conversation_id, "run_error")
    # pydantic-ai ends the text message before RUN_ERROR: a whole message, kept as it is
    assert [(m["content"], m["replyToMessageId"], m["incomplete"]) for m in messages if m["author"] == "agent"] == [
        ("Let me check", question["_id"], False), ("A teammate will reply shortly", question["_id"], False)]
    # an agent whose RUN_ERROR cuts a text message short: what it streamed is kept, marked incomplete
    remote.override = raw_stream(
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "TEXT_MESSAGE_START", "messageId": "m"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Your order is"},
        {"type": "RUN_ERROR", "message": "quota"})
    visitor, conversation_id = visitor_with_conversation(ac, site)
    question = ask(ac, visitor, conversation_id, "And now?")
    messages = handed_off(ac, site, visitor, conversation_id, "run_error")
    assert [(m["content"], m["replyToMessageId"]) for m in messages if m["incomplete"]] == [
        ("Your order is", question["_id"])]


def test_a_silent_agent_times_out(ac, site, remote):
    async def silent(messages, info):
        await asyncio.sleep(30)
        yield "too late"

    agent_for(ac, site, remote, silent)
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hello?")
    handed_off(ac, site, visitor, conversation_id, "timed_out")
    assert "no event for 2.5 s" in status(ac, site)["lastError"]


def test_an_agent_that_refuses_the_secret_is_not_called_again(ac, site, remote):
    agent_for(ac, site, remote)
    remote.bearer = "not-the-secret"
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hello?")
    handed_off(ac, site, visitor, conversation_id, "refused")
    assert "HTTP 401" in status(ac, site)["lastError"] and len(remote.requests) == 1


def test_an_unreachable_agent_is_retried_then_handed_off(ac, site):
    configure(ac, site, "http://127.0.0.1:9/agent")  # the discard port: nobody listens
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hello?")
    handed_off(ac, site, visitor, conversation_id, "unreachable")


def test_an_agent_that_answers_503_then_recovers_is_called_again_with_a_new_run_id(ac, site, remote):
    agent_for(ac, site, remote, say("Back now."))
    remote.override = later(2, answering(503))
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hello?")
    [reply] = eventually(lambda: agent_replies(ac, visitor, conversation_id))
    assert reply["content"] == "Back now." and len(remote.requests) == 3
    assert {r.body["threadId"] for r in remote.requests} == {conversation_id}
    assert len({r.body["runId"] for r in remote.requests}) == 3
    assert status(ac, site)["lastOutcome"] == "succeeded"


@pytest.mark.parametrize("frames", [
    ({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, "data: {not json\n\n"),
    ({"type": "TEXT_MESSAGE_START", "messageId": "m"},),
    ({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"}),
    ({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
     {"type": "TEXT_MESSAGE_START", "messageId": "m"}),
    ({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "TEXT_MESSAGE_START", "messageId": "m"},
     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "half an ans"}),
], ids=["not-json", "no-run-started", "invalid-event", "after-finished", "ends-without-finish"])
def test_a_garbage_stream_is_a_protocol_error(ac, site, remote, frames):
    agent_for(ac, site, remote)
    remote.override = raw_stream(*frames)
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hello?")
    messages = handed_off(ac, site, visitor, conversation_id, "protocol_error")
    assert len(remote.requests) == 1  # the agent answered: never called again
    if frames[-1].get("delta") if isinstance(frames[-1], dict) else False:
        assert [m["content"] for m in messages if m["incomplete"]] == ["half an ans"]


def test_unknown_event_types_are_skipped(ac, site, remote):
    agent_for(ac, site, remote)
    remote.override = raw_stream(
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "SOMETHING_NEW", "x": 1},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "chunked "},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "answer"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hello?")
    [reply] = eventually(lambda: agent_replies(ac, visitor, conversation_id))
    assert reply["content"] == "chunked answer" and status(ac, site)["lastOutcome"] == "succeeded"


# --- one run at a time, hand-offs

def test_messages_during_a_run_are_answered_together_by_the_next(ac, site, remote):
    async def answer(messages, info):
        asked = [p.content for m in messages for p in m.parts if getattr(p, "part_kind", "") == "user-prompt"]
        if len(asked) == 1:
            async for word in words("One ", "moment ", "please.", pause=0.3):
                yield word
        else:
            yield f"Answering {len(asked)} questions."

    agent_for(ac, site, remote, answer)
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "First?")
    eventually(lambda: remote.requests, what="the first run")
    second, third = ask(ac, visitor, conversation_id, "Second?"), ask(ac, visitor, conversation_id, "Third?")
    replies = eventually(lambda: (found := agent_replies(ac, visitor, conversation_id)) and len(found) == 2 and found)
    assert [r["content"] for r in replies] == ["One moment please.", "Answering 3 questions."]
    assert replies[1]["replyToMessageId"] == third["_id"] and len(remote.requests) == 2
    assert [m["id"] for m in remote.requests[1].body["messages"]][-2:] == [second["_id"], third["_id"]]


def test_an_operator_reply_pauses_the_agent_and_patch_resumes_it(ac, site, remote):
    agent_for(ac, site, remote, say("Bot here."))
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "Hi")
    eventually(lambda: agent_replies(ac, visitor, conversation_id))
    holds = lambda: {c["_id"]: c["agentHolds"] for c in ac.get("/api/conversations", headers=site.operator, params={
        "websiteId": str(site.website_id), "inboxFilter": "all"}).json()["conversations"]}[conversation_id]
    assert holds() is True
    response = ac.post("/api/messages", headers=site.operator, json={
        "conversationId": conversation_id, "content": "A human now.", "from": "operator"})
    assert response.status_code == 200 and response.json()["author"] == "operator"
    assert conversation(ac, site, conversation_id)["agentPaused"] is True and holds() is False
    ask(ac, visitor, conversation_id, "Thanks")
    patched = ac.patch(f"/api/conversations/{conversation_id}", headers=site.operator, json={"agentPaused": False})
    assert patched.status_code == 200 and patched.json()["agentPaused"] is False
    ask(ac, visitor, conversation_id, "Bot again?")
    eventually(lambda: len(agent_replies(ac, visitor, conversation_id)) == 2)
    assert len(remote.requests) == 2  # "Thanks" came while paused: not answered
    paused = ac.patch(f"/api/conversations/{conversation_id}", headers=site.operator, json={"agentPaused": True})
    assert paused.json()["agentPaused"] is True
    ask(ac, visitor, conversation_id, "Still there?")
    bad = ac.patch(f"/api/conversations/{conversation_id}", headers=site.operator, json={"agentPaused": "no"})
    assert bad.status_code == 400 and conversation(ac, site, conversation_id)["agentPaused"] is True
    time.sleep(1)  # nothing to wait for: a run would have been asked for by now
    assert len(remote.requests) == 2


def test_the_agent_hands_off_with_its_custom_event(ac, site, remote):
    async def answer(messages, info):
        if any(getattr(p, "part_kind", "") == "tool-return" for p in messages[-1].parts):
            yield "A teammate will take it from here."
        else:
            yield call_tool("hand_off", "{}", "h1")

    agent_for(ac, site, remote, answer)
    visitor, conversation_id = visitor_with_conversation(ac, site)
    ask(ac, visitor, conversation_id, "I want a person")
    eventually(lambda: conversation(ac, site, conversation_id)["agentPaused"], what="the hand-off")
    assert [r["content"] for r in agent_replies(ac, visitor, conversation_id)] == ["A teammate will take it from here."]
    assert status(ac, site)["lastOutcome"] == "succeeded"


def test_killing_the_workers_mid_run_answers_the_message_once(infra, tmp_path):
    # a short run limit makes the dead worker's lease (the limit plus 5 s) end soon
    server = make_server(infra, tmp_path, **{**AGENT_ENV, "PARLEY_AGENT_RUN_SECONDS": "6"}).start()
    remote = AGUIAgent().start()
    try:
        with server.client() as client:
            tenant = make_tenant(server)
            agent_for(client, tenant, remote, say(*[f"w{i} " for i in range(10)], pause=0.1))
            visitor, conversation_id = visitor_with_conversation(client, tenant)
            question = ask(client, visitor, conversation_id, "Long answer please")
            eventually(lambda: remote.requests, what="the first call")
            time.sleep(0.5)  # mid-answer
            server.kill()
            server.start()
        with server.client() as client:
            replies = eventually(lambda: agent_replies(client, visitor, conversation_id), timeout=60)
            time.sleep(1.5)  # a second answer would come within the lease's time
            replies = agent_replies(client, visitor, conversation_id)
        assert len(replies) == 1 and replies[0]["replyToMessageId"] == question["_id"]
        assert not replies[0]["incomplete"] and len(remote.requests) == 2
    finally:
        remote.stop()
        server.stop()


def test_the_greeting_opens_a_visitors_conversation(ac, site, remote):
    agent_for(ac, site, remote, say("Sure."), greeting="Hi! I am the shop's assistant.")
    visitor, conversation_id = visitor_with_conversation(ac, site)
    [greeting] = eventually(lambda: agent_replies(ac, visitor, conversation_id))
    assert (greeting["content"], greeting["replyToMessageId"]) == ("Hi! I am the shop's assistant.", None)
    question = ask(ac, visitor, conversation_id, "Can you help?")
    eventually(lambda: len(agent_replies(ac, visitor, conversation_id)) == 2)
    assert [(m["role"], m["id"]) for m in remote.requests[0].body["messages"]] == [
        ("assistant", greeting["_id"]), ("user", question["_id"])]


# --- the visitor's page: readables, actions

def test_readables_and_actions_reach_the_agent_and_a_clicked_action_reaches_the_next_run(ac, agents, site, remote):
    agent_for(ac, site, remote, open_cart_then_report)
    visitor = start_session(ac, site.website_id, userId="ada", signature=sign(site.identity_secret, "ada"))
    conversation_id = ac.post("/api/chat/conversations", headers=visitor.headers).json()["_id"]
    context = ac.put("/api/chat/context", headers=visitor.headers, json={
        "readables": [{"description": "cart", "value": {"items": 2}},
                      {"userId": "grace", "description": "grace's page", "value": "CANARY-OTHER-USER"}],
        "actions": [{"name": "openCart", "description": "Opens the cart"},
                    {"userId": "grace", "name": "deleteAccount", "description": "CANARY-OTHER-ACTION"}]})
    assert context.status_code == 200, context.text
    stranger, _ = visitor_with_conversation(ac, site)
    assert ac.put("/api/chat/context", headers=stranger.headers, json={
        "readables": [{"description": "stranger's page", "value": "CANARY-STRANGER"}],
        "actions": [{"name": "strangersAction", "description": "CANARY-STRANGER-ACTION"}]}).status_code == 200
    with EventStream(agents.base_url, "/api/chat/realtime", visitor.headers) as stream:
        question = ask(ac, visitor, conversation_id, "Show me my cart")
        offered = stream.until(lambda p: p.event == "action.offered").pop()
    assert offered.data == {"conversationId": conversation_id, "toolCallId": "call-1", "name": "openCart",
                            "arguments": '{"highlight": "shoes"}'}
    body = remote.requests[0].body
    assert body["context"] == [{"description": "cart", "value": '{"items":2}'}]
    assert body["tools"] == [{"name": "openCart", "description": "Opens the cart",
                              "parameters": {"type": "object", "properties": {}}}]
    assert "CANARY" not in str(body)  # another user's, another visitor's: never in this visitor's run
    path = "/api/chat/actions/call-1/result"
    assert ac.post(path, headers=stranger.headers, json={"result": 1}).status_code == 404
    clicked = ac.post(path, headers=visitor.headers, json={"result": {"opened": True}})
    assert clicked.status_code == 200 and clicked.json() == {"toolCallId": "call-1", "conversationId": conversation_id}
    assert ac.post(path, headers=visitor.headers, json={"result": 2}).status_code == 409
    [reply] = eventually(lambda: agent_replies(ac, visitor, conversation_id))
    assert reply["content"] == "Done: {'opened': True}" and reply["replyToMessageId"] == question["_id"]
    follow_up = remote.requests[1].body["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool"]
    assert follow_up[1]["toolCalls"][0]["function"] == {"name": "openCart", "arguments": '{"highlight": "shoes"}'}
    assert (follow_up[2]["toolCallId"], follow_up[2]["content"]) == ("call-1", '{"opened":true}')
