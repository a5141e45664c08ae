"""The MCP server behind a load balancer: two API processes on one database and one public URL. A
connection made through one process works through the other: registration, consent, code, token,
refresh, revocation and the reply ledger are shared, nothing is kept in one process."""

from __future__ import annotations

import socket

from tests.support.servers import Server, make_server, make_tenant
from tests.support.mcp_helpers import Flow, pkce, rpc, structured_result
from tests.integration.test_mcp import operator_messages, seed_conversation


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_api_processes_serve_one_connection(infra, tmp_path):
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"  # the one URL the host knows: issuer and audience of every token
    first = make_server(infra, tmp_path / "a", PARLEY_PUBLIC_URL=public_url)
    shared = dict(database_url=first.database_url, nats_url=first.nats_url, env=first.env)
    workers, second = Server(**shared, data_dir=tmp_path / "w"), Server(**shared, data_dir=tmp_path / "b")
    processes = [workers.start("--role", "workers"), first.start("--role", "api", "--port", str(port)),
                 second.start("--role", "api")]
    try:
        tenant = make_tenant(workers)
        with first.client() as one, second.client() as two:
            conversation_id = seed_conversation(one, tenant)
            registered = Flow(one, public_url)
            registered.register()
            verifier, challenge = pkce()
            code = registered.code(tenant.operator_email, challenge)  # consent through the first
            at_second = Flow(two, public_url, registered.client_id, registered.client_secret)
            issued = at_second.exchange(code, verifier)  # the code redeemed through the second
            assert issued.status_code == 200, issued.text
            tokens = issued.json()

            for http in (one, two):
                websites = structured_result(http, tokens["access_token"], "list_websites")["websites"]
                assert [w["id"] for w in websites] == [str(tenant.website_id)]
            reply = {"conversationId": conversation_id, "content": "Sent once", "requestId": "one-request"}
            sent = [structured_result(http, tokens["access_token"], "send_operator_reply", **reply)["sent"]
                    for http in (one, two)]
            assert sent == [True, True]  # the replay through the other process returns the first result
            assert [m["content"] for m in operator_messages(two, tenant, conversation_id)] == ["Sent once"]

            refreshed = registered.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
            assert refreshed.status_code == 200, refreshed.text
            reused = at_second.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
            assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"  # rotated out
            # the reuse (a leaked token) ended the connection: its newest refresh token is refused too
            newest = registered.token(grant_type="refresh_token", refresh_token=refreshed.json()["refresh_token"])
            assert newest.status_code == 400

            last = registered.tokens(tenant.operator_email)
            assert rpc(two, last["access_token"], "tools/list").status_code == 200
            revoked = two.post("/oauth/revoke", data={"client_id": registered.client_id,
                                                      "client_secret": registered.client_secret,
                                                      "token": last["refresh_token"]})
            assert revoked.status_code == 200, revoked.text
            assert rpc(one, last["access_token"], "tools/list").status_code == 401
    finally:
        for process in reversed(processes):
            process.stop()
