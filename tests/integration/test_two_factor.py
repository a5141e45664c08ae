"""Two-factor sign-in against the running service: enrolment and confirmation with a code this test
computes (pyotp), sign-in that asks for it, recovery codes used once, the organization's requirement
(enrolment-only tokens), and the secret that never leaves through the events API or the exports."""

from __future__ import annotations

import io
import re
import time
import uuid
import zipfile

import pyotp
import pytest

from commands import admin
from tests.integration.test_history_export import parquet_text
from tests.support.mcp_helpers import Flow, browser, hidden_fields, organizations, pkce
from tests.support.servers import make_server, make_tenant, token

PASSWORD = "correct horse"


def sign_in(http, email: str, totp: str | None = None, password: str = PASSWORD):
    body = {"email": email, "password": password} | ({"totp": totp} if totp is not None else {})
    return http.post("/api/operators/sessions", json=body)


def enrol(http, headers) -> tuple[pyotp.TOTP, dict, list[str]]:
    """Turns two-factor sign-in on: the operator's TOTP, the enrolment's answer and the recovery codes."""
    started = http.post("/api/operators/me/totp", headers=headers)
    assert started.status_code == 200, started.text
    enrolment = started.json()
    totp = pyotp.TOTP(enrolment["secret"])
    confirmed = http.post("/api/operators/me/totp/confirm", json={"code": totp.now()}, headers=headers)
    assert confirmed.status_code == 200, confirmed.text
    return totp, enrolment, confirmed.json()["recoveryCodes"]


def code_at(totp: pyotp.TOTP, offset_steps: int) -> str:
    """The code of a step next to the current one: each passes once, so a second sign-in uses another."""
    return totp.at(time.time() + offset_steps * totp.interval)


def assert_two_factor_required(response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/two-factor-required")
    assert "basic" not in response.headers["www-authenticate"].lower()


def new_operator(server, org_id: uuid.UUID) -> tuple[str, dict]:
    store = server.store()
    try:
        email = f"second-{uuid.uuid4().hex[:8]}@example.com"
        created, secret = admin.create_operator(store, org_id, email, PASSWORD)
    finally:
        store.close()
    server.wait_projected(created.position)
    return email, token(secret)


def test_enrolment_answers_an_rfc_6238_secret_its_uri_and_a_qr_code(http, tenant):
    enrolment = http.post("/api/operators/me/totp", headers=tenant.operator).json()
    assert re.fullmatch(r"[A-Z2-7]{32}", enrolment["secret"])
    uri = enrolment["otpauthUri"]
    assert uri.startswith("otpauth://totp/Parley:") and f"secret={enrolment['secret']}" in uri
    parsed = pyotp.parse_uri(uri)
    assert (parsed.digits, parsed.interval, parsed.digest().name) == (6, 30, "sha1")
    assert enrolment["qrSvg"].startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in enrolment["qrSvg"]
    # not on until confirmed: the password alone still signs in
    assert sign_in(http, tenant.operator_email).status_code == 200
    status = http.get("/api/operators/me/totp", headers=tenant.operator).json()
    assert status == {"enrolled": False, "required": False}


def test_a_wrong_confirmation_code_is_refused(http, server, tenant):
    enrolment = http.post("/api/operators/me/totp", headers=tenant.operator).json()
    right = pyotp.TOTP(enrolment["secret"]).now()
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"
    refused = http.post("/api/operators/me/totp/confirm", json={"code": wrong}, headers=tenant.operator)
    assert refused.status_code == 400 and refused.json()["field"] == "code"
    no_enrolment = http.post("/api/operators/me/totp/confirm", json={"code": right},
                             headers=new_operator(server, tenant.org_id)[1])
    assert no_enrolment.status_code == 409


def test_sign_in_asks_for_the_code_once_it_is_on(http, tenant):
    totp, _, codes = enrol(http, tenant.operator)
    assert len(codes) == 10 and len(set(codes)) == 10
    assert http.get("/api/operators/me/totp", headers=tenant.operator).json() == {"enrolled": True, "required": False}

    assert_two_factor_required(sign_in(http, tenant.operator_email))
    wrong = sign_in(http, tenant.operator_email, f"{(int(totp.now()) + 1) % 1_000_000:06d}")
    assert_two_factor_required(wrong)
    assert "wrong" in wrong.json()["detail"]
    # the wrong password says nothing of a second factor
    bad_password = sign_in(http, tenant.operator_email, totp.now(), password="wrong horse")
    assert bad_password.status_code == 401 and not bad_password.json()["type"].endswith("/two-factor-required")

    code = code_at(totp, 1)
    signed_in = sign_in(http, tenant.operator_email, code)
    assert signed_in.status_code == 200, signed_in.text
    assert http.get("/api/conversations", headers=token(signed_in.json()["token"])).status_code == 200
    assert_two_factor_required(sign_in(http, tenant.operator_email, code))  # a code passes once


def test_a_recovery_code_works_once_in_place_of_the_code(http, tenant):
    _, _, codes = enrol(http, tenant.operator)
    first = sign_in(http, tenant.operator_email, codes[3].upper().replace("-", " "))  # as typed, loosely
    assert first.status_code == 200, first.text
    assert_two_factor_required(sign_in(http, tenant.operator_email, codes[3]))
    assert sign_in(http, tenant.operator_email, codes[4]).status_code == 200


def test_turning_it_off_takes_a_code(http, tenant):
    totp, _, codes = enrol(http, tenant.operator)
    again = http.post("/api/operators/me/totp", headers=tenant.operator)
    assert again.status_code == 409
    refused = http.request("DELETE", "/api/operators/me/totp", json={"code": "000000"}, headers=tenant.operator)
    assert refused.status_code == 400 and refused.json()["field"] == "code"
    removed = http.request("DELETE", "/api/operators/me/totp", json={"code": code_at(totp, -1)},
                           headers=tenant.operator)
    assert removed.status_code == 200 and removed.json() == {"enrolled": False, "required": False}
    assert sign_in(http, tenant.operator_email).status_code == 200
    assert sign_in(http, tenant.operator_email, codes[0]).status_code == 200  # ignored: it is off


def test_an_organization_requiring_it_sends_operators_without_it_to_enrol(http, server, tenant):
    not_yet = http.put("/api/organization/security", json={"requireTwoFactor": True}, headers=tenant.operator)
    assert not_yet.status_code == 409  # the one requiring it has it on first
    enrol(http, tenant.operator)
    required = http.put("/api/organization/security", json={"requireTwoFactor": True}, headers=tenant.operator)
    assert required.status_code == 200 and required.json() == {"requireTwoFactor": True}

    email, _ = new_operator(server, tenant.org_id)
    signed_in = sign_in(http, email)
    assert signed_in.status_code == 200
    limited = token(signed_in.json()["token"])
    for method, path in (("GET", "/api/conversations"), ("GET", "/api/websites"), ("GET", "/api/events"),
                         ("POST", "/api/messages"), ("PUT", "/api/organization/security")):
        refused = http.request(method, path, headers=limited, json={})
        assert refused.status_code == 403, (method, path, refused.text)
        assert refused.json()["type"].endswith("/two-factor-enrolment-required"), (method, path)
    assert http.get("/api/operators/me", headers=limited).json()["email"] == email
    assert http.get("/api/operators/me/totp", headers=limited).json() == {"enrolled": False, "required": True}
    assert http.get("/api/operators/sessions/current", headers=limited).status_code == 200

    enrol(http, limited)
    assert http.get("/api/conversations", headers=limited).status_code == 200  # the same token, in full now
    assert_two_factor_required(sign_in(http, email))

    lifted = http.put("/api/organization/security", json={"requireTwoFactor": False}, headers=tenant.operator)
    assert lifted.status_code == 200
    other_email, _ = new_operator(server, tenant.org_id)
    assert http.get("/api/conversations", headers=token(sign_in(http, other_email).json()["token"])).status_code == 200


def test_the_secret_and_the_recovery_codes_never_leave(http, server, tenant, tmp_path):
    totp, enrolment, codes = enrol(http, tenant.operator)
    sign_in(http, tenant.operator_email, codes[0])
    http.request("DELETE", "/api/operators/me/totp", json={"code": codes[1]}, headers=tenant.operator)
    enrol(http, tenant.operator)
    operator_id = uuid.UUID(http.get("/api/operators/me", headers=tenant.operator).json()["_id"])
    store = server.store()
    try:
        stream = store.load(operator_id)
    finally:
        store.close()
    hashes = [h for r in stream for h in getattr(r.event, "recovery_code_hashes", [])]
    stored_secrets = [r.event.totp_secret for r in stream if hasattr(r.event, "totp_secret")]
    assert len(stored_secrets) == 2 and all(secret.startswith("sealed:v1:") for secret in stored_secrets)
    assert not any(enrolment["secret"] in secret for secret in stored_secrets)  # sealed at rest too
    assert len(hashes) == 20
    hidden = [enrolment["secret"], *codes, *hashes]

    texts = {"events": http.get("/api/events", headers=tenant.operator).text}
    for fmt in ("parquet", "jsonl"):
        response = http.get("/api/events/export", headers=tenant.operator, params={"format": fmt})
        folder = tmp_path / fmt
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            archive.extractall(folder)
        texts[fmt] = parquet_text(folder) + "".join(p.read_text() for p in folder.iterdir() if p.suffix != ".parquet")
    for name, text in texts.items():
        assert "OperatorTotpConfirmed" in text and "RecoveryCodeUsed" in text, name  # they are there, public part
        leaked = [value for value in hidden if value in text or value.replace("-", "") in text]
        assert not leaked, f"{name} leaks {leaked}"


def consent_signed_in(server, person, flow: Flow, email: str, resource: str = "default"):
    """The consent page after the password step: the code step for an operator with two-factor sign-in."""
    _, challenge = pkce()
    to_consent = person.get(flow.authorize_url(challenge, resource=resource))
    page = person.get(to_consent.headers["location"])
    return person.post("/oauth/consent", data={**hidden_fields(page.text), "email": email, "password": PASSWORD})


@pytest.mark.parametrize("resource", ["default", "api"], ids=["mcp-client", "parley-login"])
def test_the_consent_page_asks_for_the_code_too(server, http, tenant, resource):
    """The MCP consent page and `parley login`'s (the same page, for the REST API) run the same check."""
    flow = Flow(http, server.base_url)
    flow.register(client_name="Two-factor host", token_endpoint_auth_method="none")
    resource = server.base_url + "/api" if resource == "api" else resource
    totp, _, codes = enrol(http, tenant.operator)
    with browser(server.base_url) as person:
        asked = consent_signed_in(server, person, flow, tenant.operator_email, resource)
        assert asked.status_code == 200 and 'name="code"' in asked.text and 'name="org"' not in asked.text
        skipped = person.post("/oauth/consent", data={**hidden_fields(asked.text), "step": "decide",
                                                      "org": str(tenant.org_id), "decision": "allow"})
        assert skipped.status_code == 400  # no organization can be chosen before the code
        asked = consent_signed_in(server, person, flow, tenant.operator_email, resource)
        wrong = person.post("/oauth/consent", data={**hidden_fields(asked.text), "code": "000000"})
        assert wrong.status_code == 401 and "wrong" in wrong.text and 'name="code"' in wrong.text
        passed = person.post("/oauth/consent", data={**hidden_fields(wrong.text), "code": codes[0]})
        assert passed.status_code == 200 and str(tenant.org_id) in organizations(passed.text).values()
        done = person.post("/oauth/consent", data={**hidden_fields(passed.text), "org": str(tenant.org_id),
                                                   "decision": "allow"})
        assert done.status_code == 303 and "code=" in done.headers["location"]
        # the recovery code passed once, here as at the REST sign-in
        assert_two_factor_required(sign_in(http, tenant.operator_email, codes[0]))


def test_the_consent_page_refuses_an_organization_requiring_it_to_an_operator_without_it(server, http, tenant):
    enrol(http, tenant.operator)
    assert http.put("/api/organization/security", json={"requireTwoFactor": True},
                    headers=tenant.operator).status_code == 200
    email, _ = new_operator(server, tenant.org_id)
    flow = Flow(http, server.base_url)
    flow.register()
    with browser(server.base_url) as person:
        choose = consent_signed_in(server, person, flow, email)
        assert choose.status_code == 200 and 'name="org"' in choose.text
        refused = person.post("/oauth/consent", data={**hidden_fields(choose.text), "org": str(tenant.org_id),
                                                      "decision": "allow"})
        assert refused.status_code == 403 and "requires two-factor sign-in" in refused.text


@pytest.fixture(scope="module")
def guarded(infra, tmp_path_factory):
    """A server with the default backoff (the suite's own server lifts it)."""
    server = make_server(infra, tmp_path_factory.mktemp("guarded-2fa"), PARLEY_SIGNIN_FAILURES_PER_ACCOUNT="5").start()
    yield server
    server.stop()


def test_guessing_the_code_with_the_right_password_is_held_back(guarded):
    """Only a whole sign-in clears an address's failures: the right password with wrong codes counts."""
    victim = make_tenant(guarded)
    with guarded.client() as http:
        totp, _, _ = enrol(http, victim.operator)
        wrong = f"{(int(totp.now()) + 500_000) % 1_000_000:06d}"
        assert [sign_in(http, victim.operator_email, wrong).status_code for _ in range(5)] == [401] * 5
        held = sign_in(http, victim.operator_email, totp.now())
        assert held.status_code == 429 and int(held.headers["Retry-After"]) >= 1

        # the consent page's code step counts too
        other = make_tenant(guarded)
        enrol(http, other.operator)
        flow = Flow(http, guarded.base_url)
        flow.register()
        with browser(guarded.base_url) as person:
            asked = consent_signed_in(guarded, person, flow, other.operator_email)
            for _ in range(4):  # the password step counted one
                asked = person.post("/oauth/consent", data={**hidden_fields(asked.text), "code": wrong})
                assert asked.status_code == 401
            paused = person.post("/oauth/consent", data={**hidden_fields(asked.text), "code": wrong})
            assert paused.status_code == 429 and "Sign-in paused" in paused.text
