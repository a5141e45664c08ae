"""Identity, webhook and agent secrets are sealed at rest: a dump of the whole database never shows them,
while visitors' signatures still verify, deliveries are still signed and the agent still gets its bearer
secret; values stored in the clear before sealing keep working."""

from __future__ import annotations

import secrets
import subprocess
import time
import uuid

import psycopg
import pytest

from commands.agent import agent_stream
from commands.principal import Principal
from commands.sso import SsoSettings, configure_sso, current_sso, sso_stream
from delivery.webhooks import sign
from events import types as ev
from events.ids import new_id
from events.sealing import Sealer, WrongKey, check_key
from events.store import Pending
from commands.streams import now
from parley.embedded import _postgres_wheel
from tests.support.agui_agent import AGUIAgent, say
from tests.support.receivers import Receiver
from tests.support.servers import make_server, make_tenant
from tests.support.visitors import sign as sign_identity, start_session, visitor_with_conversation

ENV = dict(PARLEY_WEBHOOK_ALLOW_PRIVATE="1", PARLEY_WEBHOOK_RETRY_BASE_SECONDS="0.05",
           PARLEY_WEBHOOK_TIMEOUT_SECONDS="2")


@pytest.fixture(scope="module")
def sealing(infra, tmp_path_factory):
    server = make_server(infra, tmp_path_factory.mktemp("sealing"), **ENV).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client(sealing):
    with sealing.client() as http:
        yield http


@pytest.fixture
def remote():
    agent = AGUIAgent().start()
    yield agent
    agent.stop()


def dump(database_url: str) -> str:
    """Everything the database holds, as `pg_dump` writes it (bytea, such as the events' payloads, in hex)."""
    pg_dump = _postgres_wheel()._commands.POSTGRES_BIN_PATH / "pg_dump"
    return subprocess.run([str(pg_dump), "--dbname", database_url], capture_output=True, text=True, check=True,
                          timeout=120).stdout


def shows(dumped: str, value: str) -> bool:
    return value in dumped or value.encode().hex() in dumped


def agent_calls(remote: AGUIAgent, timeout: float = 20) -> list:
    deadline = time.monotonic() + timeout
    while not remote.requests:
        assert time.monotonic() < deadline, "the agent was not called"
        time.sleep(0.05)
    return remote.requests


def signed_delivery(receiver: Receiver, secret: str) -> bool:
    delivery = receiver.wait_for(1)[-1]
    timestamp = int(delivery.header("X-Service-Signature").split(",")[0].removeprefix("t="))
    return delivery.header("X-Service-Signature") == sign(secret, timestamp, delivery.body)


def subscribe(client, tenant, website_id, url: str) -> dict:
    response = client.post("/api/webhooksubscriptions", headers=tenant.operator, json={
        "websiteId": str(website_id), "url": url, "events": ["customer.created"]})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_dump_of_the_database_never_shows_a_secret_that_still_works(sealing, client, remote):
    tenant = make_tenant(sealing)
    name = f"canary-{uuid.uuid4().hex[:10]}"
    created = client.post("/api/websites", headers=tenant.operator, json={"websiteName": name})
    assert created.status_code == 200, created.text
    first_identity = created.json()["identitySecret"]
    website_id = created.json()["_id"]
    rotated = client.post(f"/api/websites/{name}/identity-secret", headers=tenant.operator)
    assert rotated.status_code == 200, rotated.text
    identity = rotated.json()["identitySecret"]
    agent = client.put(f"/api/websites/{name}/agent", headers=tenant.operator, json={"url": remote.url})
    assert agent.status_code == 200, agent.text
    remote.bearer, remote.answer = agent.json()["secret"], say("Hello.")
    shown_agent = client.get(f"/api/websites/{name}/agent", headers=tenant.operator)
    assert "secret" not in shown_agent.json()  # shown once, to the request that made it

    with Receiver() as receiver:
        webhook = subscribe(client, tenant, website_id, receiver.url)
        visitor = start_session(client, website_id, userId="ada", signature=sign_identity(identity, "ada"))
        assert signed_delivery(receiver, webhook["secret"])
    refused = client.post("/api/chat/sessions", json={"websiteId": website_id, "userId": "bob",
                                                      "signature": sign_identity(first_identity, "bob")})
    assert refused.status_code == 401
    conversation = client.post("/api/chat/conversations", headers=visitor.headers).json()["_id"]
    client.post("/api/chat/messages", headers=visitor.headers, json={"conversationId": conversation, "content": "Hi"})
    remote_calls = agent_calls(remote)
    assert remote_calls[0].authorization == f"Bearer {agent.json()['secret']}"

    dumped = dump(sealing.database_url)
    assert shows(dumped, name)  # the search finds what is there, in the read models and in the events
    for secret in (first_identity, identity, webhook["secret"], agent.json()["secret"]):
        assert not shows(dumped, secret)
        assert not shows(dumped, secret.encode().hex())  # nor a hex of it in a JSON payload


def test_secrets_stored_in_the_clear_before_sealing_still_work(sealing, client, remote):
    """The events an older version wrote are never rewritten: their clear secrets are read as they are."""
    tenant = make_tenant(sealing)
    clear_identity, clear_webhook, clear_bearer = "legacy-identity", "whsec_legacy", "agsec_legacy"
    configured = client.put(f"/api/websites/{tenant.website_name}/agent", headers=tenant.operator,
                            json={"url": remote.url})
    assert configured.status_code == 200, configured.text
    store = sealing.store()
    try:
        website_version = len(store.load(tenant.website_id))
        agent_version = len(store.load(agent_stream(tenant.website_id)))
        subscription_id = new_id()
        at = now()
        with Receiver() as receiver:
            sealing.wait_projected(store.append(
                Pending(tenant.website_id, website_version + 1, ev.WebsiteIdentitySecretRotated(
                    org_id=tenant.org_id, at=at, website_id=tenant.website_id, identity_secret=clear_identity)),
                Pending(agent_stream(tenant.website_id), agent_version + 1, ev.AgentSecretSet(
                    org_id=tenant.org_id, at=at, website_id=tenant.website_id, secret=clear_bearer)),
                Pending(subscription_id, 1, ev.WebhookSubscribed(
                    org_id=tenant.org_id, at=at, subscription_id=subscription_id, website_id=tenant.website_id,
                    url=receiver.url, events=["customer.created"], secret=clear_webhook))), "webhooks")
            remote.bearer, remote.answer = clear_bearer, say("Hello.")
            visitor = start_session(client, tenant.website_id, userId="ada",
                                    signature=sign_identity(clear_identity, "ada"))
            assert signed_delivery(receiver, clear_webhook)
    finally:
        store.close()
    visitor, conversation = visitor_with_conversation(client, tenant)
    client.post("/api/chat/messages", headers=visitor.headers, json={"conversationId": conversation, "content": "Hi"})
    assert agent_calls(remote)[0].authorization == f"Bearer {clear_bearer}"


def test_the_single_sign_on_client_secret_is_sealed_and_opened_for_the_sign_in(sealing):
    tenant = make_tenant(sealing)
    owner = Principal("operator", tenant.org_id, uuid.uuid4())  # configure_sso reads its organization
    client_secret = f"sso-canary-{uuid.uuid4().hex}"
    settings = SsoSettings(issuer="https://login.example.com", client_id="parley", allowed_domains=["example.com"],
                           client_secret=client_secret)
    store = sealing.store()
    try:
        configure_sso(store, sealing.sealer, owner, settings)
        configure_sso(store, sealing.sealer, owner, settings)  # the same settings again: nothing new
        history = store.load(sso_stream(tenant.org_id))
        assert len(history) == 1 and history[0].event.client_secret.startswith("sealed:v1:")
        assert current_sso(store, sealing.sealer, tenant.org_id).client_secret == client_secret
    finally:
        store.close()
    assert not shows(dump(sealing.database_url), client_secret)


def test_a_process_with_another_key_is_refused(infra):
    database_url = infra.new_database()
    key, other = Sealer(secrets.token_urlsafe(32)), Sealer(secrets.token_urlsafe(32))
    check_key(database_url, key)
    check_key(database_url, key)  # every process of the deployment, with the same key
    with pytest.raises(WrongKey, match="PARLEY_SECRETS_KEY"):
        check_key(database_url, other)
    with psycopg.connect(database_url) as conn:
        probe = conn.execute("SELECT probe FROM parley_sealing_probe").fetchone()[0]
    assert probe.startswith("sealed:v1:")
