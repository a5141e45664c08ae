"""What never leaves through the MCP server: a canary planted in every excluded field (the customer's
e-mail, name, phone and user id, a metadata value, the page context the agent may read, an internal
note, the visitor's and the operator's message contents, an attachment's name and bytes, a campaign's content, an API key's secret, the
website's identity secret, the AI agent's bearer secret, greeting and fallback message, a webhook
subscription's signing secret), and the excluded ids (customer, message, operator), must not appear in one
byte of any tool result (`content`, `structuredContent`, `_meta`), tool listing or view resource."""

from __future__ import annotations

import asyncio
import uuid

import psycopg

from tests.support.attachments import upload
from tests.support.mcp_helpers import Consent, mcp_session
from tests.support.visitors import chat, sign, start_session

VIEWS = ("ui://parley/overview.html", "ui://parley/inbox.html", "ui://parley/activity.html")
PUBLIC_ADDRESS = "https://93.184.216.34"  # a public address the settings accept; never called (see below)


def plant_operator_secrets(http, tenant, canaries: dict[str, str]) -> dict[str, str]:
    """The agent's configuration (its greeting and fallback message canaries) and the two secrets the
    server answers only once: the agent's bearer secret and a webhook subscription's signing secret.
    Both switched off at once, so that nothing is sent to the address."""
    agent = http.put(f"/api/websites/{tenant.website_name}/agent", headers=tenant.operator, json={
        "url": f"{PUBLIC_ADDRESS}/agui", "enabled": False, "greeting": canaries["greeting"],
        "fallbackMessage": canaries["fallback"]})
    assert agent.status_code == 200 and agent.json()["secret"].startswith("agsec_"), agent.text
    hook = http.post("/api/webhooksubscriptions", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "url": f"{PUBLIC_ADDRESS}/hook", "events": ["customer.created"]})
    assert hook.status_code == 200 and hook.json()["secret"], hook.text
    paused = http.put(f"/api/webhooksubscriptions/{hook.json()['_id']}", headers=tenant.operator,
                      json={"active": False})
    assert paused.status_code == 200 and paused.json()["active"] is False, paused.text
    return {"agent secret": agent.json()["secret"], "webhook secret": hook.json()["secret"]}


def test_no_planted_canary_leaves_through_any_tool_or_view(server, http, tenant):
    canaries = {name: f"CANARY{uuid.uuid4().hex[:12]}{name}" for name in
                ("email", "nickname", "phone", "userid", "metadata", "readable", "note", "visitor", "reply",
                 "campaign", "greeting", "fallback", "filename", "filebytes")}
    secrets = plant_operator_secrets(http, tenant, canaries)
    email = canaries["email"].lower() + "@example.com"
    visitor = start_session(http, tenant.website_id, userId=canaries["userid"],
                            signature=sign(tenant.identity_secret, canaries["userid"]), email=email,
                            emailSignature=sign(tenant.identity_secret, email))
    profile = http.put("/api/chat/profile", headers=visitor.headers, json={
        "nickname": canaries["nickname"], "phone": canaries["phone"]})
    assert profile.status_code == 200, profile.text
    conversation = http.post("/api/chat/conversations", headers=chat(visitor.token), json={})
    assert conversation.status_code == 200, conversation.text
    conversation_id = conversation.json()["_id"]
    for path, body in (("/api/chat/metadata", {"metadata": {"plan": canaries["metadata"]}}),
                       ("/api/chat/context", {"readables": [{"userId": None, "description": "Cart",
                                                             "value": {"note": canaries["readable"]}}]})):
        stored = http.put(path, headers=visitor.headers, json=body)
        assert stored.status_code == 200, stored.text
    message_ids = []
    for path, body, headers in (
            ("/api/chat/messages", {"conversationId": conversation_id, "content": canaries["visitor"]}, visitor.headers),
            ("/api/messages", {"conversationId": conversation_id, "content": canaries["reply"], "from": "operator"},
             tenant.operator),
            ("/api/messages", {"conversationId": conversation_id, "content": f"{canaries['note']} @{tenant.operator_email}",
                               "from": "operator", "internal": True}, tenant.operator)):
        posted = http.post(path, headers=headers, json=body)
        assert posted.status_code < 300, posted.text
        message_ids.append(posted.json()["_id"])
    http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": conversation_id, "content": canaries["visitor"] + " again", "from": "customer"})
    # an attachment, like a message's body, never leaves through MCP: not its name, bytes, id or link
    attachment = upload(http, visitor.headers, canaries["filename"] + ".txt", canaries["filebytes"].encode(),
                        path="/api/chat/attachments")
    assert attachment.status_code == 201, attachment.text
    with_file = http.post("/api/chat/messages", headers=visitor.headers, json={
        "conversationId": conversation_id, "content": "", "attachmentIds": [attachment.json()["_id"]]})
    assert with_file.status_code == 200, with_file.text
    message_ids.append(with_file.json()["_id"])
    campaign = http.post("/api/campaigns", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "name": "Offer", "content": canaries["campaign"]})
    assert campaign.status_code == 200, campaign.text
    key_headers = tenant.key()
    api_key_secret = key_headers["Authorization"]  # the Basic credential carries the secret
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        operator_id = conn.execute("SELECT id FROM rm_operators WHERE email = %s", (tenant.operator_email,)).fetchone()[0]
    forbidden = {**canaries, "email address": email, "customer id": visitor.customer_id,
                 "operator id": str(operator_id), "identity secret": tenant.identity_secret,
                 "operator token": tenant.operator_token, "api key": api_key_secret.split()[1], **secrets,
                 **{f"message id {i}": m for i, m in enumerate(message_ids)},
                 "attachment id": attachment.json()["_id"], "attachment link": "/api/attachments/"}

    async def everything() -> list[str]:
        website = str(tenant.website_id)
        calls = [("list_websites", {}), ("get_website_summary", {"websiteId": website}),
                 ("get_workload_summary", {}), ("count_unresolved_conversations", {}),
                 ("list_conversations", {"websiteId": website}),
                 ("list_conversations", {"websiteId": website, "inboxFilter": "mentions"}),
                 ("search_help_documents", {"query": canaries["visitor"]}),
                 ("get_help_document", {"id": message_ids[0]}),  # a message's id asks for a message: refused
                 ("show_overview", {}), ("show_inbox", {"websiteId": website}),
                 ("show_conversation_activity", {"websiteId": website, "days": 3}),
                 ("get_website_summary", {"websiteId": canaries["email"]}),  # errors must not echo data either
                 ("send_operator_reply", {"conversationId": visitor.customer_id, "content": "x", "requestId": "c1"}),
                 ("set_conversation_resolved", {"conversationId": conversation_id, "resolved": True}),
                 ("list_campaigns", {}), ("inspect_campaign", {"id": campaign.json()["_id"]})]
        async with mcp_session(server.base_url, Consent(server.base_url, tenant.operator_email)) as session:
            outputs = [(await session.list_tools()).model_dump_json(by_alias=True),
                       (await session.list_resources()).model_dump_json(by_alias=True)]
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                outputs.append(result.model_dump_json(by_alias=True))
            for uri in VIEWS:
                outputs.append((await session.read_resource(uri)).model_dump_json(by_alias=True))
            listing = await session.call_tool("list_conversations", {"websiteId": website})
            assert listing.structured_content["conversations"][0]["id"] == conversation_id
            assert listing.structured_content["conversations"][0]["messageCount"] == 4  # the note is not counted
            summary = await session.call_tool("get_website_summary", {"websiteId": website})
            assert summary.structured_content["mentions"] == 1
        return outputs

    outputs = asyncio.run(everything())
    for output in outputs:
        for what, value in forbidden.items():
            assert value not in output, f"{what} leaked: {output[:300]}"
