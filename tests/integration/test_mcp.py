"""The MCP server end to end, with the SDK's own client over real HTTP: discovery, dynamic registration,
PKCE, the consent page with an organization choice, every tool and view, the step-up to parley:write,
refresh, revocation, and the double requestId."""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from tests.support.servers import make_tenant
from projections.views.inbox import MAX_PAGE
from tests.support.inbox_seed import Seeder
from tests.support.mcp_helpers import Consent, Flow, mcp_session, pkce, rpc, structured_result

EXPECTED_TOOLS = {
    "list_websites", "get_website_summary", "get_workload_summary", "count_unresolved_conversations",
    "list_conversations", "search_help_documents", "get_help_document", "show_overview", "show_inbox",
    "show_conversation_activity", "send_operator_reply", "set_conversation_resolved", "list_campaigns",
    "inspect_campaign",
}
WRITES = {"send_operator_reply", "set_conversation_resolved"}


def seed_conversation(http: httpx.Client, tenant, visitor_says: str = "Hello, is anyone there?") -> str:
    customer = http.post("/api/customers", headers=tenant.operator, json={"websiteId": str(tenant.website_id)})
    assert customer.status_code < 300, customer.text
    conversation = http.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "customerId": customer.json()["_id"]})
    assert conversation.status_code < 300, conversation.text
    conversation_id = conversation.json()["_id"]
    message = http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": conversation_id, "content": visitor_says, "from": "customer"})
    assert message.status_code < 300, message.text
    return conversation_id


def operator_messages(http: httpx.Client, tenant, conversation_id: str) -> list[dict]:
    response = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id})
    assert response.status_code == 200, response.text
    return [m for m in response.json() if m["from"] == "operator"]


def structured(result) -> dict:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_every_tool_end_to_end_with_the_sdk_client(server, http, tenant):
    conversation_id = seed_conversation(http, tenant)
    document = http.post("/api/documents", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "title": "Resetting your password", "published": True,
        "content": "# Resetting your password\n\nOpen Settings, choose Security and press Reset password."})
    assert document.status_code < 300, document.text
    campaign = http.post("/api/campaigns", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "name": "Spring offer", "content": "20% off this week",
        "audience": {"hasConversation": True}})
    assert campaign.status_code == 200, campaign.text
    scheduled = http.post(f"/api/campaigns/{campaign.json()['_id']}/schedule", headers=tenant.operator,
                          json={"at": "2099-01-01T09:00:00Z"})
    assert scheduled.status_code == 200, scheduled.text
    consent = Consent(server.base_url, tenant.operator_email)

    async def scenario() -> dict:
        async with mcp_session(server.base_url, consent) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            website = str(tenant.website_id)
            results = {
                "list_websites": await session.call_tool("list_websites", {}),
                "get_website_summary": await session.call_tool("get_website_summary", {"websiteId": website}),
                "get_workload_summary": await session.call_tool("get_workload_summary", {}),
                "count_unresolved_conversations": await session.call_tool("count_unresolved_conversations",
                                                                          {"websiteId": website}),
                "list_conversations": await session.call_tool("list_conversations",
                                                              {"websiteId": website, "inboxFilter": "unresolved"}),
                "search_help_documents": await session.call_tool("search_help_documents",
                                                                 {"query": "reset password", "websiteId": website}),
                "get_help_document": await session.call_tool("get_help_document", {"id": document.json()["_id"]}),
                "show_overview": await session.call_tool("show_overview", {}),
                "show_inbox": await session.call_tool("show_inbox", {"websiteId": website}),
                "show_conversation_activity": await session.call_tool("show_conversation_activity",
                                                                      {"websiteId": website}),
                "list_campaigns": await session.call_tool("list_campaigns", {"status": "scheduled"}),
                "inspect_campaign": await session.call_tool("inspect_campaign", {"id": campaign.json()["_id"]}),
            }
            reads_scope = [approval["scope"] for approval in consent.approvals]
            request_id = str(uuid.uuid4())
            reply = {"conversationId": conversation_id, "content": "Yes, how can I help?", "requestId": request_id}
            results["send_operator_reply"] = await session.call_tool("send_operator_reply", reply)
            results["send_again"] = await session.call_tool("send_operator_reply", reply)
            results["set_conversation_resolved"] = await session.call_tool(
                "set_conversation_resolved", {"conversationId": conversation_id, "resolved": True})
            results["resolve_again"] = await session.call_tool(
                "set_conversation_resolved", {"conversationId": conversation_id, "resolved": True})
            results["after_resolving"] = await session.call_tool("count_unresolved_conversations",
                                                                 {"websiteId": website})
            resources = {uri: await session.read_resource(uri) for uri in
                         ("ui://parley/overview.html", "ui://parley/inbox.html", "ui://parley/activity.html")}
            return {"tools": tools, "results": results, "read_scope": reads_scope, "resources": resources}

    outcome = asyncio.run(scenario())
    tools, results = outcome["tools"], outcome["results"]
    assert set(tools) == EXPECTED_TOOLS
    for name, tool in tools.items():
        assert tool.title and tool.description and tool.input_schema and tool.output_schema, name
        assert tool.annotations.read_only_hint is (name not in WRITES), name
        assert tool.annotations.destructive_hint is (name in WRITES), name
    assert tools["send_operator_reply"].annotations.idempotent_hint is False
    assert "not retry" in tools["send_operator_reply"].description.lower().replace("do not", "not")
    assert tools["set_conversation_resolved"].annotations.idempotent_hint is True
    for name, uri in (("show_overview", "overview"), ("show_inbox", "inbox"), ("show_conversation_activity", "activity")):
        assert tools[name].meta["ui"]["resourceUri"] == f"ui://parley/{uri}.html"
    for uri, resource in outcome["resources"].items():
        (contents,) = resource.contents
        assert contents.mime_type == "text/html;profile=mcp-app"
        assert "<script src" not in contents.text and "http" not in contents.text.replace("http-equiv", "")

    # the first consent granted what the 401 named, parley:read; the first write stepped up to parley:write
    assert outcome["read_scope"] == ["parley:read"]

    websites = structured(results["list_websites"])["websites"]
    assert [(w["id"], w["name"]) for w in websites] == [(str(tenant.website_id), tenant.website_name)]
    assert websites[0]["conversations"] == {"open": 1, "resolved": 0, "spam": 0, "total": 1}
    summary = structured(results["get_website_summary"])
    assert summary["conversations"]["open"] == 1 and summary["unread"] == 1 and summary["helpDocumentsPublished"] == 1
    assert summary["oldestWaitingSeconds"] is not None and summary["oldestWaitingSeconds"] >= 0
    assert summary["activeCampaigns"] == 1
    listed = structured(results["list_campaigns"])
    assert [c["name"] for c in listed["campaigns"]] == ["Spring offer"] and listed["nextCursor"] is None
    inspected = structured(results["inspect_campaign"])
    assert inspected["status"] == "scheduled" and inspected["scheduledAt"] == "2099-01-01T09:00:00Z"
    assert inspected["audience"]["hasConversation"] is True and inspected["audienceSize"] == 1
    assert inspected["stats"] == {"recipients": 0, "sent": 0, "replied": 0} and "content" not in inspected
    workload = structured(results["get_workload_summary"])
    assert workload["websites"] == 1 and len(workload["days"]) == 7 and workload["days"][-1]["visitorMessages"] == 1
    assert structured(results["count_unresolved_conversations"]) == {"count": 1, "pagesWalked": 1, "pageSize": MAX_PAGE,
                                                                     "websites": 1}
    page = structured(results["list_conversations"])
    assert page == {"conversations": [{
        "id": conversation_id, "resolved": False, "spam": False, "unread": True,
        "lastEditTime": page["conversations"][0]["lastEditTime"], "messageCount": 1, "awaitingReply": True}],
        "nextCursor": None}
    matches = structured(results["search_help_documents"])["documents"]
    assert matches[0]["_id"] == document.json()["_id"] and matches[0]["title"] == "Resetting your password"
    assert structured(results["get_help_document"])["content"].startswith("# Resetting your password")
    assert structured(results["show_overview"])["websites"][0]["open"] == 1
    assert results["show_overview"].content[0].text == f"{tenant.website_name}: 1 open, 1 unread"
    assert structured(results["show_inbox"])["rows"][0] == {
        "status": "open", "unread": True, "awaitingReply": True,
        "lastEditTime": page["conversations"][0]["lastEditTime"]}
    assert len(structured(results["show_conversation_activity"])["days"]) == 7

    sent, again = structured(results["send_operator_reply"]), structured(results["send_again"])
    # a replayed requestId returns the first result unchanged: a host reading "not sent" would send again
    assert sent["sent"] is True and again == sent
    assert [m["content"] for m in operator_messages(http, tenant, conversation_id)] == ["Yes, how can I help?"]
    assert structured(results["set_conversation_resolved"])["changed"] is True
    assert structured(results["resolve_again"]) == {"conversationId": conversation_id, "resolved": True,
                                                    "changed": False}
    assert structured(results["after_resolving"])["count"] == 0
    # the write needed a second consent, for both scopes, which the SDK's client asked for by itself
    assert [a["scope"] for a in consent.approvals] == ["parley:read", "parley:read parley:write"]


def test_refresh_rotates_and_revocation_ends_the_connection(server, http, tenant):
    flow = Flow(http, server.base_url)
    flow.register()
    first = flow.tokens(tenant.operator_email)
    refreshed = flow.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()
    assert second["refresh_token"] != first["refresh_token"] and second["access_token"] != first["access_token"]
    assert rpc(http, second["access_token"], "tools/list").status_code == 200

    # the rotated-out refresh token is refused, and presenting it again ends the connection (it leaked)
    reused = flow.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    assert rpc(http, second["access_token"], "tools/list").status_code == 401
    assert flow.token(grant_type="refresh_token", refresh_token=second["refresh_token"]).status_code == 400

    # revoking a refresh token ends its access tokens too
    third = flow.tokens(tenant.operator_email)
    assert rpc(http, third["access_token"], "tools/list").status_code == 200
    revoked = http.post("/oauth/revoke", data={"client_id": flow.client_id, "client_secret": flow.client_secret,
                                               "token": third["refresh_token"]})
    assert revoked.status_code == 200, revoked.text
    assert rpc(http, third["access_token"], "tools/list").status_code == 401
    assert flow.token(grant_type="refresh_token", refresh_token=third["refresh_token"]).status_code == 400


def _admin(server, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "parley.cli", "admin", *args, "--data-dir", str(server.data_dir)],
                          env=server.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_operator_of_two_organizations_chooses_one_and_loses_it_with_the_membership(server, http, tenant):
    other = make_tenant(server)
    with psycopg_connect(server) as conn:
        names = dict(conn.execute("SELECT id, name FROM rm_organizations WHERE id = ANY(%s)",
                                  ([tenant.org_id, other.org_id],)).fetchall())
    assert _admin(server, "operator", "add-org", "--email", tenant.operator_email, "--org", str(other.org_id))["member"]
    # the existing sign-in keeps working, to the organization the operator was created in
    signed_in = http.post("/api/operators/sessions", json={"email": tenant.operator_email, "password": "correct horse"})
    assert signed_in.status_code == 200

    flow = Flow(http, server.base_url)
    flow.register()
    verifier, challenge = pkce()
    code = flow.code(tenant.operator_email, challenge, org_name=names[other.org_id])
    tokens = flow.exchange(code, verifier).json()
    listed = rpc(http, tokens["access_token"], "tools/call", {"name": "list_websites", "arguments": {}})
    assert listed.status_code == 200, listed.text
    websites = listed.json()["result"]["structuredContent"]["websites"]
    assert [w["id"] for w in websites] == [str(other.website_id)]  # bound to the chosen organization only

    _admin(server, "operator", "remove-org", "--email", tenant.operator_email, "--org", str(other.org_id))
    assert wait_for_status(http, tokens["access_token"], 401)
    assert flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"]).status_code == 400


def test_a_note_in_a_joined_organization_mentions_the_operator_there(server, http, tenant):
    other = make_tenant(server)
    assert _admin(server, "operator", "add-org", "--email", tenant.operator_email, "--org", str(other.org_id))["member"]
    with psycopg_connect(server) as conn:
        other_name = conn.execute("SELECT name FROM rm_organizations WHERE id = %s", (other.org_id,)).fetchone()[0]
    mentioned, not_mentioned = seed_conversation(http, other), seed_conversation(http, other)
    for conversation_id, who in ((mentioned, tenant.operator_email.upper()), (not_mentioned, "nobody@example.com")):
        note = http.post("/api/messages", headers=other.operator, json={
            "conversationId": conversation_id, "content": f"@{who} can you take this one?", "from": "operator",
            "internal": True})
        assert note.status_code == 200, note.text

    flow = Flow(http, server.base_url)
    flow.register()
    tokens = flow.tokens(tenant.operator_email, org_name=other_name)
    summary = structured_result(http, tokens["access_token"], "get_website_summary", websiteId=str(other.website_id))
    assert summary["mentions"] == 1
    # the organization's operators, whom its dashboard offers to mention, include the one who joined it
    assert tenant.operator_email in colleagues(http, other)
    _admin(server, "operator", "remove-org", "--email", tenant.operator_email, "--org", str(other.org_id))
    assert tenant.operator_email not in colleagues(http, other)


def colleagues(http: httpx.Client, tenant) -> list[str]:
    listed = http.get("/api/operators", headers=tenant.operator)
    assert listed.status_code == 200, listed.text
    return [operator["email"] for operator in listed.json()]


def test_counting_walks_every_page_of_the_unresolved_listing(server, http, tenant):
    seed = Seeder(server, tenant.org_id, tenant.website_id)
    flow = Flow(http, server.base_url)
    flow.register()
    access_token = flow.tokens(tenant.operator_email)["access_token"]
    count = functools.partial(structured_result, http, access_token, "count_unresolved_conversations")
    assert count() == {"count": 0, "pagesWalked": 1, "pageSize": MAX_PAGE, "websites": 1}

    seed.conversations(2 * MAX_PAGE)  # two full pages, every conversation at the same time (ties)
    assert count(websiteId=str(tenant.website_id)) == {"count": 2 * MAX_PAGE, "pagesWalked": 2,
                                                       "pageSize": MAX_PAGE, "websites": 1}
    seed.conversations(3, at=datetime.now(timezone.utc) - timedelta(days=3))
    seed.conversations(7, resolved=True)
    seed.conversations(4, spam=True)
    assert count() == {"count": 2 * MAX_PAGE + 3, "pagesWalked": 3, "pageSize": MAX_PAGE, "websites": 1}
    assert count(conversationFilter="last-hour")["count"] == 2 * MAX_PAGE
    second_website, _ = tenant.add_website()
    Seeder(server, tenant.org_id, second_website).conversations(5)
    assert count() == {"count": 2 * MAX_PAGE + 8, "pagesWalked": 4, "pageSize": MAX_PAGE, "websites": 2}
    assert count(websiteId=str(second_website))["count"] == 5

    # the same conversations a client paging through the REST listing meets, and its filteredTotal
    walked, skip = set(), 0
    while True:
        page = http.get("/api/conversations", headers=tenant.operator, params={
            "websiteId": str(tenant.website_id), "inboxFilter": "unresolved", "limit": MAX_PAGE, "skip": skip,
            "fields": "_id"}).json()
        walked |= {c["_id"] for c in page["conversations"]}
        skip += MAX_PAGE
        if skip >= page["filteredTotal"]:
            break
    assert len(walked) == page["filteredTotal"] == 2 * MAX_PAGE + 3


def test_revoking_the_operators_sessions_ends_its_mcp_connections(server, http, tenant):
    flow = Flow(http, server.base_url)
    flow.register()
    tokens = flow.tokens(tenant.operator_email)
    assert rpc(http, tokens["access_token"], "tools/list").status_code == 200
    _admin(server, "operator", "revoke-sessions", "--email", tenant.operator_email)
    assert wait_for_status(http, tokens["access_token"], 401)
    assert http.get("/api/websites", headers=tenant.operator).status_code == 401
    assert flow.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"]).status_code == 400


def wait_for_status(http: httpx.Client, access_token: str, status: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if rpc(http, access_token, "tools/list").status_code == status:
            return True
        time.sleep(0.05)
    return False


def psycopg_connect(server):
    import psycopg

    return psycopg.connect(server.database_url, autocommit=True)


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"])
def test_protected_resource_metadata(server, http, path):
    metadata = http.get(path).json()
    assert metadata["resource"] == server.base_url + "/mcp"
    assert metadata["authorization_servers"] == [server.base_url]
    assert metadata["scopes_supported"] == ["parley:read", "parley:write"]


def test_authorization_server_metadata_and_keys(server, http):
    metadata = http.get("/.well-known/oauth-authorization-server").json()
    assert metadata["issuer"] == server.base_url
    assert metadata["registration_endpoint"] == server.base_url + "/oauth/register"
    assert metadata["authorization_endpoint"] == server.base_url + "/oauth/authorize"
    assert metadata["token_endpoint"] == server.base_url + "/oauth/token"
    assert metadata["revocation_endpoint"] == server.base_url + "/oauth/revoke"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    keys = http.get("/.well-known/jwks.json").json()["keys"]
    assert keys and all(k["kty"] == "EC" and k["alg"] == "ES256" and "d" not in k for k in keys)


def test_no_token_is_answered_with_the_resource_metadata_and_the_read_scope(server, http):
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.base_url}/.well-known/oauth-protected-resource/mcp", '
        'scope="parley:read"')
