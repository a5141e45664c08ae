"""Operators' accounts: invitations (accepted once, expired, revoked, owner-only for owners), passwords
(changed, reset by a link used once), sessions (user agent, current, revoked) and the first owner of a fresh
install (from this machine or with the setup code, once)."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import httpx
import pytest

from commands.admin import hash_secret, reserve_name
from commands.streams import now
from events import types as ev
from events.ids import new_id
from events.store import Pending
from tests.support.servers import make_server, token

PASSWORD = "correct horse"
NEW_PASSWORD = "a much longer passphrase"


def problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    return response.json()


def invite(http: httpx.Client, headers: dict, email: str, role: str = "agent") -> dict:
    made = http.post("/api/operators/invitations", headers=headers, json={"email": email, "role": role})
    assert made.status_code == 201, made.text
    return made.json()


def link_token(url: str) -> str:
    return url.rsplit("/", 1)[1]


def sign_in(http: httpx.Client, email: str, password: str, **headers: str) -> httpx.Response:
    return http.post("/api/operators/sessions", json={"email": email, "password": password}, headers=headers)


def new_email() -> str:
    return f"invitee-{uuid.uuid4().hex[:8]}@example.com"


def test_an_invitation_is_accepted_once_and_the_invitee_signs_in(http, tenant):
    email = new_email()
    made = invite(http, tenant.operator, email)
    assert re.fullmatch(r".*/app/#/invite/[\w-]+", made["url"]) and made["expiresAt"]
    listed = {o["email"]: o for o in http.get("/api/operators", headers=tenant.operator).json()}
    assert {k: listed[email][k] for k in ("_id", "role", "status")} == {
        "_id": made["_id"], "role": "agent", "status": "invited"}

    accepted = http.post(f"/api/invitations/{link_token(made['url'])}/accept",
                         json={"displayName": "Bo", "password": NEW_PASSWORD})
    assert accepted.status_code == 200, accepted.text
    me = http.get("/api/operators/me", headers=token(accepted.json()["token"])).json()
    assert (me["email"], me["displayName"], me["role"], me["status"]) == (email, "Bo", "agent", "active")
    assert sign_in(http, email, NEW_PASSWORD).status_code == 200
    statuses = [o["status"] for o in http.get("/api/operators", headers=tenant.operator).json() if o["email"] == email]
    assert statuses == ["active"]

    again = http.post(f"/api/invitations/{link_token(made['url'])}/accept",
                      json={"displayName": "Eve", "password": NEW_PASSWORD})
    problem(again, 404)


def test_the_token_is_stored_only_as_a_hash(server, http, tenant):
    made = invite(http, tenant.operator, new_email())
    secret = link_token(made["url"])
    store = server.store()
    try:
        stored = [r.event for r in store.load(uuid.UUID(made["_id"]))]
    finally:
        store.close()
    assert secret not in repr(stored) and hash_secret(secret) not in repr(stored)
    events = http.get("/api/events", headers=tenant.operator, params={"types": "OperatorInvited"}).text
    assert made["_id"] in events and secret not in events and hash_secret(secret) not in events


def test_an_expired_invitation_answers_410(server, http, tenant):
    secret, invitation_id = "pi_expired-" + uuid.uuid4().hex, new_id()
    store = server.store()
    try:
        position = store.append(
            reserve_name("invitation", hash_secret(secret), tenant.org_id, invitation_id),
            Pending(invitation_id, 1, ev.OperatorInvited(
                org_id=tenant.org_id, at=now() - timedelta(days=8), invitation_id=invitation_id, email=new_email(),
                role="agent", expires_at=now() - timedelta(days=1), invited_by=new_id())))
    finally:
        store.close()
    server.wait_projected(position)
    assert str(invitation_id) not in http.get("/api/operators", headers=tenant.operator).text
    expired = problem(http.post(f"/api/invitations/{secret}/accept", json={"password": NEW_PASSWORD}), 410)
    assert "expired" in expired["detail"]
    problem(http.post("/api/invitations/pi_nothing/accept", json={"password": NEW_PASSWORD}), 404)


def test_an_admin_invites_agents_and_admins_but_not_owners(http, tenant):
    admin_ = tenant.add_operator("admin")
    agent = tenant.add_operator("agent")
    refused = problem(http.post("/api/operators/invitations", headers=admin_.headers,
                                json={"email": new_email(), "role": "owner"}), 403)
    assert "owner" in refused["detail"]
    invite(http, admin_.headers, new_email(), "admin")
    problem(http.post("/api/operators/invitations", headers=agent.headers,
                      json={"email": new_email(), "role": "agent"}), 403)
    invite(http, tenant.operator, new_email(), "owner")
    problem(http.post("/api/operators/invitations", headers=tenant.operator,
                      json={"email": tenant.operator_email, "role": "agent"}), 409)


def test_a_revoked_invitation_is_no_longer_listed_nor_usable(http, tenant):
    email = new_email()
    made = invite(http, tenant.operator, email)
    problem(http.post("/api/operators/invitations", headers=tenant.operator, json={"email": email, "role": "agent"}),
            409)
    assert http.delete(f"/api/operators/invitations/{made['_id']}", headers=tenant.operator).status_code == 204
    assert email not in http.get("/api/operators", headers=tenant.operator).text
    problem(http.post(f"/api/invitations/{link_token(made['url'])}/accept", json={"password": NEW_PASSWORD}), 404)


def test_an_operator_of_another_organization_joins_with_its_own_password(http, tenant, other_tenant):
    made = invite(http, tenant.operator, other_tenant.operator_email, "admin")
    secret = link_token(made["url"])
    wrong = problem(http.post(f"/api/invitations/{secret}/accept", json={"password": "not the password"}), 403)
    assert wrong["field"] == "password"
    joined = http.post(f"/api/invitations/{secret}/accept", json={"password": PASSWORD})
    assert joined.status_code == 200, joined.text
    session = http.get("/api/operators/sessions/current", headers=token(joined.json()["token"])).json()
    assert session["organizationId"] == str(tenant.org_id)
    members = {o["email"]: o for o in http.get("/api/operators", headers=tenant.operator).json()}
    assert (members[other_tenant.operator_email]["role"], members[other_tenant.operator_email]["status"]) == (
        "admin", "active")


def test_a_password_change_ends_the_other_sessions_and_keeps_this_one(http, tenant):
    agent = tenant.add_operator("agent")
    other = token(sign_in(http, agent.email, PASSWORD).json()["token"])
    too_short = problem(http.put("/api/operators/me/password", headers=agent.headers,
                                 json={"currentPassword": PASSWORD, "newPassword": "short"}), 400)
    assert "10 characters" in too_short["detail"]
    problem(http.put("/api/operators/me/password", headers=agent.headers,
                     json={"currentPassword": "wrong password", "newPassword": NEW_PASSWORD}), 403)
    changed = http.put("/api/operators/me/password", headers=agent.headers,
                       json={"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD})
    assert changed.status_code == 200, changed.text
    assert http.get("/api/operators/me", headers=other).status_code == 401
    assert http.get("/api/operators/me", headers=agent.headers).status_code == 200
    assert sign_in(http, agent.email, PASSWORD).status_code == 401
    assert sign_in(http, agent.email, NEW_PASSWORD).status_code == 200


def test_an_admins_reset_link_sets_the_password_once_and_ends_every_session(http, tenant):
    agent = tenant.add_operator("agent")
    admin_ = tenant.add_operator("admin")
    problem(http.post(f"/api/operators/{tenant_owner_id(http, tenant)}/password-reset", headers=admin_.headers), 403)
    problem(http.post(f"/api/operators/{admin_.id}/password-reset", headers=agent.headers), 403)
    made = http.post(f"/api/operators/{agent.id}/password-reset", headers=admin_.headers)
    assert made.status_code == 201, made.text
    assert set(made.json()) == {"url", "expiresAt", "mailed"} and "/app/#/reset/" in made.json()["url"]
    assert made.json()["mailed"] is False  # this server sends no e-mail: the link is only to copy
    secret = link_token(made.json()["url"])
    problem(http.post(f"/api/password-resets/{secret}", json={"password": "short"}), 400)
    used = http.post(f"/api/password-resets/{secret}", json={"password": NEW_PASSWORD})
    assert used.status_code == 200, used.text
    assert http.get("/api/operators/me", headers=agent.headers).status_code == 401
    assert sign_in(http, agent.email, NEW_PASSWORD).status_code == 200
    problem(http.post(f"/api/password-resets/{secret}", json={"password": "yet another passphrase"}), 404)


def tenant_owner_id(http: httpx.Client, tenant) -> str:
    return http.get("/api/operators/me", headers=tenant.operator).json()["_id"]


def test_a_reset_request_answers_202_for_any_address(http):
    for email in ("nobody-here@example.com", "x@y.example"):
        answered = http.post("/api/password-resets", json={"email": email})
        assert answered.status_code == 202 and answered.content == b""


def test_sessions_list_the_user_agent_and_the_current_one_and_end_one_by_one(http, tenant):
    agent = tenant.add_operator("agent")
    phone = sign_in(http, agent.email, PASSWORD, **{"User-Agent": "Phone browser/1.0"}).json()["token"]
    desk = sign_in(http, agent.email, PASSWORD, **{"User-Agent": "Desk browser/2.0"}).json()["token"]
    listed = http.get("/api/operators/me/sessions", headers=token(desk))
    assert listed.status_code == 200, listed.text
    sessions = {s["userAgent"]: s for s in listed.json()}
    assert sessions["Desk browser/2.0"]["current"] and not sessions["Phone browser/1.0"]["current"]
    assert all(s["createdAt"] and set(s) == {"_id", "createdAt", "lastUsedAt", "userAgent", "current"}
               for s in listed.json())
    assert sessions["Desk browser/2.0"]["lastUsedAt"]  # this request used it

    ended = http.delete(f"/api/operators/me/sessions/{sessions['Phone browser/1.0']['_id']}", headers=token(desk))
    assert ended.status_code == 200, ended.text
    assert http.get("/api/operators/me", headers=token(phone)).status_code == 401
    assert http.get("/api/operators/me", headers=token(desk)).status_code == 200
    others = http.get("/api/operators/me/sessions", headers=tenant.operator).json()
    problem(http.delete(f"/api/operators/me/sessions/{others[0]['_id']}", headers=token(desk)), 404)


@pytest.fixture
def fresh(infra, tmp_path):
    """A server of its own, on an empty database, behind a proxy it trusts (this machine)."""
    running = make_server(infra, tmp_path, PARLEY_TRUSTED_PROXIES="127.0.0.1").start()
    yield running
    running.stop()


def test_the_first_owner_is_created_once_from_this_machine_or_with_the_setup_code(fresh):
    code = re.search(r"setup code (\S+)\)", "".join(fresh.output)).group(1)
    owner = {"organizationName": "Acme", "email": "first@acme.example", "password": NEW_PASSWORD,
             "displayName": "Ada"}
    remote = {"X-Forwarded-For": "203.0.113.9"}
    with fresh.client() as http:
        assert http.get("/api/setup").json() == {"available": True, "local": True}
        assert http.get("/api/setup", headers=remote).json() == {"available": True, "local": False}
        refused = problem(http.post("/api/setup", headers=remote, json=owner), 403)
        assert refused["field"] == "setupCode"
        problem(http.post("/api/setup", headers=remote, json={**owner, "setupCode": "guessed"}), 403)
        problem(http.post("/api/setup", json={**owner, "password": "short"}), 400)

        created = http.post("/api/setup", json=owner)
        assert created.status_code == 201, created.text
        me = http.get("/api/operators/me", headers=token(created.json()["token"])).json()
        assert (me["email"], me["role"], me["displayName"]) == ("first@acme.example", "owner", "Ada")
        assert http.get("/api/setup").json()["available"] is False
        problem(http.post("/api/setup", json={**owner, "email": "second@acme.example"}), 409)
        problem(http.post("/api/setup", headers=remote, json={**owner, "setupCode": code}), 409)


def test_the_setup_code_lets_another_machine_create_the_first_owner(fresh):
    code = re.search(r"setup code (\S+)\)", "".join(fresh.output)).group(1)
    with fresh.client() as http:
        created = http.post("/api/setup", headers={"X-Forwarded-For": "203.0.113.9"}, json={
            "organizationName": "Remote", "email": "remote@acme.example", "password": NEW_PASSWORD,
            "setupCode": code})
        assert created.status_code == 201, created.text

