"""Roles on every route: an operator whose role is below what a route's description states gets 403
problem+json there (the attacker's request: an `agent` reaching for the settings, secrets, keys, exports and
the team), before anything is read or changed; the OpenAPI document states the role; and what an agent's
work needs (conversations, customers, messages, help documents) still answers."""

from __future__ import annotations

import re
import uuid

import pytest

from readapi.openapi import build_document, operation_of, route_handlers
from tests.support.apps import bare_app

# The route families the issue names as an admin's (and an owner's), by path prefix.
ADMIN_FAMILIES = ("/api/apikeys", "/api/webhooksubscriptions", "/api/campaigns", "/api/events",
                  "/api/websites/{website_name}/agent", "/api/websites/{website_name}/identity-secret",
                  "/api/websites/{website_name}", "/api/operators/{operator_id}")


def role_routes() -> list[tuple[str, str, str]]:
    """(method, path, role) of every operation whose description states a role."""
    found = []
    for path, handler in route_handlers(bare_app()):
        operation = operation_of(handler)
        if operation is not None and operation.auth.role:
            for method in sorted(handler.http_methods - {"HEAD", "OPTIONS"}):
                found.append((method, re.sub(r"\{(\w+):\w+\}", r"{\1}", path), operation.auth.role))
    return found


def concrete(path: str) -> str:
    """The path with its parameters filled in: a website's name, or an id of nothing."""
    return re.sub(r"\{(\w+)\}", lambda m: "site-x" if m.group(1) == "website_name" else str(uuid.uuid4()), path)


def test_every_admin_family_states_its_role_in_the_document():
    stated = {path for _, path, role in role_routes() if role in ("admin", "owner")}
    for family in ADMIN_FAMILIES:
        assert any(path.startswith(family) for path in stated), f"no route of {family} states a role"
    document = build_document(bare_app())
    create_key = document["paths"]["/api/apikeys"]["post"]
    assert create_key["x-parley-role"] == "admin" and "`admin` role or above" in create_key["description"]
    assert "x-parley-role" not in document["paths"]["/api/conversations"]["get"]


@pytest.mark.parametrize("method,path,role", role_routes())
def test_an_agent_is_refused_what_its_role_may_not_do(http, tenant, method, path, role):
    agent = tenant.add_operator("agent")
    response = http.request(method, concrete(path), headers=agent.headers, json={})
    assert response.status_code == 403, (method, path, response.text)
    assert response.headers["content-type"].startswith("application/problem+json")
    assert f"needs the {role} role" in response.json()["detail"]


def test_an_agent_still_works_conversations_customers_and_documents(http, tenant):
    agent = tenant.add_operator("agent")
    for path in ("/api/conversations", "/api/customers", "/api/documents", "/api/operators/me", "/api/websites"):
        assert http.get(path, headers=agent.headers).status_code == 200, path
    assert http.get("/api/operators/me", headers=agent.headers).json()["role"] == "agent"


def test_an_admin_and_an_owner_may_manage_but_only_an_owner_makes_owners(http, tenant):
    admin = tenant.add_operator("admin")
    assert http.get("/api/apikeys", headers=admin.headers).status_code == 200
    assert http.get("/api/webhooksubscriptions", headers=tenant.operator).status_code == 200
    agent = tenant.add_operator("agent")
    promoted = http.patch(f"/api/operators/{agent.id}", headers=admin.headers, json={"role": "owner"})
    assert promoted.status_code == 403
    assert http.get("/api/operators/me", headers=agent.headers).json()["role"] == "agent"  # nothing changed
