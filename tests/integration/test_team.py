"""Roles and the team: the admin CLI's --role, the role in GET /api/operators(/me), changing, disabling,
re-enabling and removing an operator (the last owner kept), and what an agent may do over MCP."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from commands import admin
from tests.integration.test_mcp import seed_conversation, wait_for_status
from tests.support.mcp_helpers import Flow, browser, hidden_fields, pkce, structured_result
from tests.support.servers import token

PASSWORD = "correct horse"


def problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    return response.json()


def sign_in(http: httpx.Client, email: str) -> httpx.Response:
    return http.post("/api/operators/sessions", json={"email": email, "password": PASSWORD})


def me(http: httpx.Client, headers: dict) -> httpx.Response:
    return http.get("/api/operators/me", headers=headers)


def parley_admin(server, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "parley.cli", "admin", *args, "--data-dir", str(server.data_dir)],
                          env=server.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_cli_makes_an_organizations_first_operator_its_owner_and_the_next_agents(server, http):
    store = server.store()
    try:
        org = admin.create_org(store, "Roles from the shell")
    finally:
        store.close()
    created = [parley_admin(server, "operator", "create", "--org", str(org.id), "--email", f"{who}@roles.example",
                            "--password", PASSWORD, *extra)
               for who, extra in (("first", ()), ("second", ()), ("third", ("--role", "admin")))]
    assert [c["role"] for c in created] == ["owner", "agent", "admin"]
    assert [me(http, token(c["token"])).json()["role"] for c in created] == ["owner", "agent", "admin"]


def test_the_team_lists_each_operators_role_status_and_display_name(http, tenant):
    agent = tenant.add_operator("agent")
    renamed = http.patch("/api/operators/me", headers=agent.headers, json={"displayName": "  Bo  "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["displayName"] == "Bo"
    listed = {o["email"]: o for o in http.get("/api/operators", headers=tenant.operator).json()}
    assert {k: listed[agent.email][k] for k in ("_id", "displayName", "role", "status")} == {
        "_id": str(agent.id), "displayName": "Bo", "role": "agent", "status": "active"}
    assert listed[tenant.operator_email]["role"] == "owner"
    assert me(http, tenant.operator).json()["role"] == "owner"


def test_an_agent_cannot_manage_the_team(http, tenant):
    agent, other = tenant.add_operator("agent"), tenant.add_operator("agent")
    for request in (http.patch(f"/api/operators/{other.id}", headers=agent.headers, json={"status": "disabled"}),
                    http.delete(f"/api/operators/{other.id}", headers=agent.headers)):
        assert "role" in problem(request, 403)["detail"]
    assert problem(http.patch(f"/api/operators/{other.id}", headers=tenant.key(), json={"role": "admin"}), 403)


def test_an_admin_manages_agents_but_only_an_owner_touches_the_owner_role(http, tenant):
    admin_ = tenant.add_operator("admin")
    agent = tenant.add_operator("agent")
    promoted = http.patch(f"/api/operators/{agent.id}", headers=admin_.headers, json={"role": "admin"})
    assert promoted.status_code == 200 and promoted.json()["role"] == "admin"
    assert me(http, agent.headers).json()["role"] == "admin"  # the token's principal follows the change
    problem(http.patch(f"/api/operators/{agent.id}", headers=admin_.headers, json={"role": "owner"}), 403)
    owner_id = me(http, tenant.operator).json()["_id"]
    problem(http.patch(f"/api/operators/{owner_id}", headers=admin_.headers, json={"status": "disabled"}), 403)
    assert http.patch(f"/api/operators/{agent.id}", headers=tenant.operator, json={"role": "owner"}).status_code == 200


def test_disabling_ends_the_tokens_and_refuses_sign_in_until_re_enabled(http, tenant):
    agent = tenant.add_operator("agent")
    assert me(http, agent.headers).status_code == 200
    disabled = http.patch(f"/api/operators/{agent.id}", headers=tenant.operator, json={"status": "disabled"})
    assert disabled.status_code == 200 and disabled.json()["status"] == "disabled"
    problem(me(http, agent.headers), 401)
    problem(sign_in(http, agent.email), 401)

    enabled = http.patch(f"/api/operators/{agent.id}", headers=tenant.operator, json={"status": "active"})
    assert enabled.json()["status"] == "active"
    problem(me(http, agent.headers), 401)  # the old tokens stay ended
    signed_in = sign_in(http, agent.email)
    assert signed_in.status_code == 200, signed_in.text
    assert me(http, token(signed_in.json()["token"])).json()["role"] == "agent"


def test_the_last_owner_cannot_be_demoted_disabled_or_removed(http, tenant):
    owner_id = me(http, tenant.operator).json()["_id"]
    for change in ({"role": "admin"}, {"status": "disabled"}):
        assert "last owner" in problem(http.patch(f"/api/operators/{owner_id}", headers=tenant.operator,
                                                  json=change), 409)["detail"]
    problem(http.delete(f"/api/operators/{owner_id}", headers=tenant.operator), 409)
    # with a second owner, the first may step down
    second = tenant.add_operator("owner")
    assert http.patch(f"/api/operators/{owner_id}", headers=second.headers, json={"role": "admin"}).status_code == 200
    assert me(http, tenant.operator).json()["role"] == "admin"


def test_a_removed_operator_leaves_the_team_and_its_tokens_end(http, tenant):
    agent = tenant.add_operator("agent")
    removed = http.delete(f"/api/operators/{agent.id}", headers=tenant.operator)
    assert removed.status_code == 204, removed.text
    problem(me(http, agent.headers), 401)
    problem(sign_in(http, agent.email), 401)
    assert agent.email not in [o["email"] for o in http.get("/api/operators", headers=tenant.operator).json()]
    problem(http.delete(f"/api/operators/{agent.id}", headers=tenant.operator), 404)


@pytest.mark.parametrize("change", [{"role": "root"}, {"status": "invited"}, {"displayName": "x" * 101},
                                    {"email": "new@example.com"}])
def test_a_change_outside_the_contract_is_400(http, tenant, change):
    agent = tenant.add_operator("agent")
    problem(http.patch(f"/api/operators/{agent.id}", headers=tenant.operator, json=change), 400)


def test_an_agent_uses_the_mcp_tools_and_loses_the_connection_when_disabled(server, http, tenant):
    agent = tenant.add_operator("agent")
    conversation_id = seed_conversation(http, tenant)
    flow = Flow(http, server.base_url)
    flow.register()
    access_token = flow.tokens(agent.email)["access_token"]
    assert structured_result(http, access_token, "list_websites")["websites"]
    replied = structured_result(http, access_token, "send_operator_reply", conversationId=conversation_id,
                                content="An agent answers", requestId="agent-reply-1")
    assert replied["conversationId"] == conversation_id

    assert http.patch(f"/api/operators/{agent.id}", headers=tenant.operator,
                      json={"status": "disabled"}).status_code == 200
    assert wait_for_status(http, access_token, 401)
    # and the consent page refuses its sign-in, as the API does
    with browser(server.base_url) as person:
        consent = person.get(person.get(flow.authorize_url(pkce()[1])).headers["location"])
        refused = person.post("/oauth/consent", data={**hidden_fields(consent.text), "email": agent.email,
                                                      "password": PASSWORD})
    assert refused.status_code == 401 and "wrong password" in refused.text
