"""The audit log (GET /api/audit) against the shared server: planted secrets never show, only "***";
filters and cursor pages; one organization never sees another's; an API key cannot read it."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import datetime, timedelta, timezone

import psycopg

from tests.support.servers import basic


def audit(http, tenant, **params) -> dict:
    response = http.get("/api/audit", headers=tenant.operator, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def me(http, tenant) -> str:
    return http.get("/api/operators/me", headers=tenant.operator).json()["_id"]


def plant(http, tenant) -> dict[str, str]:
    """Makes the changes the log must show, and returns the secrets they involve, by name."""
    # Public addresses written as such: the shared server resolves no name and refuses private ones; nothing
    # is delivered to them (no message is sent, no visitor talks to the agent).
    canaries = {"url token": f"canary-url-{uuid.uuid4().hex}", "agent url token": f"canary-agent-{uuid.uuid4().hex}"}
    hook = http.post("/api/webhooksubscriptions", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "url": f"https://93.184.216.34/in/{canaries['url token']}",
        "events": ["message.created"]})
    assert hook.status_code == 200, hook.text
    canaries["webhook secret"] = hook.json()["secret"]
    site = f"/api/websites/{tenant.website_name}"
    rotated = http.post(f"{site}/identity-secret", headers=tenant.operator)
    assert rotated.status_code == 200, rotated.text
    canaries["identity secret"] = rotated.json()["identitySecret"]
    canaries["former identity secret"] = tenant.identity_secret
    agent = http.put(f"{site}/agent", headers=tenant.operator,
                     json={"url": f"https://93.184.216.34/agui?token={canaries['agent url token']}"})
    assert agent.status_code == 200, agent.text
    canaries["agent secret"] = agent.json()["secret"]
    updated = http.put(site, headers=tenant.operator, json={"brandColor": "#ff0000"})
    assert updated.status_code == 200, updated.text
    canaries["operator token"] = tenant.operator_token
    canaries["password"] = "correct horse"
    return canaries


def test_changes_are_logged_by_whom_and_from_where_with_secrets_masked(http, server, tenant):
    canaries = plant(http, tenant)
    operator_id = me(http, tenant)
    page = audit(http, tenant)
    by_action = {entry["action"]: entry for entry in page["items"]}
    assert {"webhook.created", "website.identity_secret_rotated", "agent.configured", "agent.secret_set",
            "website.updated"} <= set(by_action)
    for action in ("webhook.created", "website.identity_secret_rotated", "agent.configured", "website.updated"):
        entry = by_action[action]
        assert entry["actor"] == {"kind": "operator", "id": operator_id, "displayName": tenant.operator_email}
        assert entry["address"] == "127.0.0.1"
    hook = by_action["webhook.created"]
    assert hook["subject"]["kind"] == "webhook"
    assert hook["changes"]["secret"] == {"before": None, "after": "***"}
    assert hook["changes"]["url"] == {"before": None, "after": "***"}
    assert hook["changes"]["events"] == {"before": None, "after": ["message.created"]}
    assert by_action["website.identity_secret_rotated"]["changes"] == {
        "identitySecret": {"before": "***", "after": "***"}}
    assert by_action["agent.secret_set"]["changes"] == {"secret": {"before": None, "after": "***"}}
    assert by_action["website.updated"]["changes"]["brandColor"] == {"before": "#123456", "after": "#ff0000"}
    assert [entry["at"] for entry in page["items"]] == sorted((entry["at"] for entry in page["items"]), reverse=True)

    answers = {"json": http.get("/api/audit", headers=tenant.operator).text}
    for media in ("text/csv", "application/x-ndjson"):
        download = http.get("/api/audit", headers={**tenant.operator, "Accept": media})
        assert download.status_code == 200 and download.headers["content-type"].startswith(media)
        answers[media] = download.text
    with psycopg.connect(server.database_url) as conn:
        answers["read model"] = json.dumps(conn.execute(
            "SELECT json_agg(t) FROM (SELECT * FROM rm_audit_entries UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, "
            "NULL, NULL, kind, id, state, NULL FROM rm_audit_subjects) t").fetchone()[0])
    for where, text in answers.items():
        assert "***" in text, where
        leaked = [name for name, value in canaries.items() if value in text]
        assert not leaked, (where, leaked)

    rows = list(csv.DictReader(io.StringIO(answers["text/csv"])))
    assert {row["action"] for row in rows} >= set(by_action)
    assert json.loads(next(r for r in rows if r["action"] == "webhook.created")["changes"])["secret"]["after"] == "***"
    lines = [json.loads(line) for line in answers["application/x-ndjson"].splitlines()]
    assert [line["_id"] for line in lines] == [row["_id"] for row in rows]


def test_filters_and_cursor_pages(http, tenant):
    plant(http, tenant)
    operator_id = me(http, tenant)
    assert {e["action"] for e in audit(http, tenant, action="webhook.created")["items"]} == {"webhook.created"}
    assert {e["subject"]["kind"] for e in audit(http, tenant, action="website.*")["items"]} == {"website"}
    mine = audit(http, tenant, actorId=operator_id)["items"]
    assert mine and {e["actor"]["id"] for e in mine} == {operator_id}
    assert audit(http, tenant, actorId=str(uuid.uuid4()))["items"] == []
    now = datetime.now(timezone.utc)
    assert audit(http, tenant, since=(now + timedelta(hours=1)).isoformat())["items"] == []
    assert audit(http, tenant, until=(now - timedelta(days=1)).isoformat())["items"] == []
    assert len(audit(http, tenant, since=(now - timedelta(hours=1)).isoformat())["items"]) >= 5
    bad = http.get("/api/audit", headers=tenant.operator, params={"since": "yesterday"})
    assert bad.status_code == 400 and bad.json()["field"] == "since"

    everything = audit(http, tenant)["items"]
    walked, cursor = [], None
    while True:
        page = audit(http, tenant, limit=2, **({"cursor": cursor} if cursor else {}))
        walked += page["items"]
        if not (cursor := page["nextCursor"]):
            break
    assert [e["_id"] for e in walked] == [e["_id"] for e in everything]
    first = audit(http, tenant, limit=1)
    other_query = http.get("/api/audit", headers=tenant.operator,
                           params={"limit": 1, "cursor": first["nextCursor"], "action": "webhook.created"})
    assert other_query.status_code == 400 and other_query.json()["field"] == "cursor"


def test_an_api_keys_change_names_the_key(http, tenant):
    key_id, key = tenant.new_key()
    created = http.post("/api/customers", headers=key, json={"websiteId": str(tenant.website_id), "nickname": "Ada"})
    assert created.status_code == 200, created.text
    entry = audit(http, tenant, action="customer.created")["items"][0]
    assert entry["actor"]["kind"] == "apikey" and entry["actor"]["id"] == str(key_id)
    assert entry["changes"]["nickname"] == {"before": None, "after": "Ada"}


def test_another_organization_never_sees_the_log_and_a_key_cannot_read_it(http, tenant, other_tenant):
    plant(http, tenant)
    operator_id = me(http, tenant)
    theirs = audit(http, other_tenant)["items"]
    assert not [e for e in theirs if e["actor"]["id"] == operator_id or e["subject"]["id"] == str(tenant.website_id)]
    assert audit(http, other_tenant, actorId=operator_id)["items"] == []
    cursor = audit(http, tenant, limit=1)["nextCursor"]
    assert http.get("/api/audit", headers=other_tenant.operator,
                    params={"limit": 1, "cursor": cursor}).status_code == 400
    refused = http.get("/api/audit", headers=tenant.key())
    assert refused.status_code == 403 and refused.headers["content-type"].startswith("application/problem+json")
    assert http.get("/api/audit").status_code == 401
    assert http.get("/api/audit", headers=basic("pk_not_a_key")).status_code == 401
