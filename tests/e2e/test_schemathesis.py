"""Schemathesis, a tool nobody here wrote, against the live server's own document: every operation, with
generated valid and invalid inputs, with a real credential of the kind each operation accepts.

Every check Schemathesis has runs (no 5xx; status, content type, headers and body as documented;
problem+json errors; invalid input refused; links followed; ...) but `positive_data_acceptance`: some
rules are beyond what JSON Schema says (a reaction is exactly one emoji, `conversationFilter` only goes
with `inboxFilter`, a website id must name a website of yours), so schema-valid input may rightly be
refused, with a documented 4xx that the other checks verify. The operations run in groups (by tag), one
test each, to stay within the per-test timeout on a shared machine: the examples, fuzzing (valid and
invalid inputs) and stateful (following the document's links) phases. The seed is printed, and
`PARLEY_SCHEMATHESIS_SEED` replays a run
(default a fixed seed; `random` picks a new one)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from tests.support.servers import make_server, make_tenant, token

EXAMPLES_PER_OPERATION = int(os.environ.get("PARLEY_SCHEMATHESIS_EXAMPLES", "5"))
# The coverage phase (every boundary value of every parameter) takes about 25 minutes on a busy two-core
# machine: beyond the per-test timeout, so it is opt-in (PARLEY_SCHEMATHESIS_PHASES=examples,coverage,...).
PHASES = os.environ.get("PARLEY_SCHEMATHESIS_PHASES", "examples,fuzzing,stateful")
UNLIMITED = "1000000"


@pytest.fixture(scope="module")
def fuzzed(infra, tmp_path_factory):
    running = make_server(infra, tmp_path_factory.mktemp("schemathesis"), PARLEY_RATE_APIKEY_PER_MINUTE=UNLIMITED,
                          PARLEY_RATE_OPERATOR_PER_MINUTE=UNLIMITED).start()
    yield running
    running.stop()


def credentials(server) -> dict[str, dict[str, str]]:
    """An `Authorization` header of each kind, for one organization."""
    tenant = make_tenant(server)
    with server.client() as http:
        session = http.post("/api/chat/sessions", json={"websiteId": str(tenant.website_id)})
        assert session.status_code == 200, session.text
    return {"operator": tenant.operator, "apikey": tenant.key(),
            "chat": {"Authorization": f"ChatSession {session.json()['sessionToken']}"},
            # signing out revokes the token it presents: that operation gets a token of its own
            "sign_out": token(make_tenant(server).operator_token)}


def config(document: dict, base_url: str, seed: int, headers: dict[str, dict[str, str]]) -> str:
    """Schemathesis' configuration: each operation sends the credential of the first kind it accepts."""
    lines = [f'base-url = "{base_url}"', f"seed = {seed}", "request-timeout = 60", "max-stream-events = 1",
             "[generation]", f"max-examples = {EXAMPLES_PER_OPERATION}"]
    kinds = {"operatorToken": "operator", "apiKey": "apikey", "chatSession": "chat"}
    for path_item in document["paths"].values():
        for operation in path_item.values():
            accepted = [kinds[name] for requirement in operation["security"] for name in requirement]
            if operation["operationId"] == "signOut":
                accepted = ["sign_out"]
            elif "apikey" in accepted:
                accepted = ["apikey"]  # operators have their own operations; keys are the integrators' way in
            streams = any("text/event-stream" in answer.get("content", {}) for answer in operation["responses"].values())
            if accepted or streams:
                lines += ["[[operations]]", f'include-operation-id = "{operation["operationId"]}"']
            if streams:
                # a stream never ends: what arrives within 3 s is read and checked, then it is cut
                lines += ["request-timeout = 3"]
            if accepted:
                lines += ["[operations.headers]", *(f'{k} = "{v}"' for k, v in headers[accepted[0]].items())]
            if operation["operationId"] == "listEvents":
                # following never ends by design: Schemathesis reads the history, which does
                lines += ["[operations.parameters]", '"query.follow" = false']
    return "\n".join(lines) + "\n"


# operations by tag, one test each; a tag in no group (a new feature's) is fuzzed by the last test
GROUPS = {
    "workspace": ("customers", "websites", "operators", "apikeys"),
    "conversations": ("conversations", "messages", "batch"),
    "visitors": ("chat", "realtime"),
    "documents": ("documents", "sandbox", "docs"),
    "webhooks": ("webhooksubscriptions", "events"),
}
EVERYTHING_ELSE = "everything else"
DEFAULT_SEED = 1111000646


@pytest.fixture(scope="module")
def run_settings(fuzzed, tmp_path_factory) -> tuple[Path, int]:
    # A fixed seed by default, so a CI run is repeatable; PARLEY_SCHEMATHESIS_SEED=random explores afresh.
    chosen = os.environ.get("PARLEY_SCHEMATHESIS_SEED", str(DEFAULT_SEED))
    seed = random.randrange(2**31) if chosen == "random" else int(chosen)
    with fuzzed.client() as http:
        document = msgspec.json.decode(http.get("/schema/openapi.json").content)
    settings = tmp_path_factory.mktemp("schemathesis-settings") / "schemathesis.toml"
    settings.write_text(config(document, fuzzed.base_url, seed, credentials(fuzzed)))
    return settings, seed


def tags_regex(tags) -> str:
    return "^(" + "|".join(tags) + ")$"


@pytest.mark.parametrize("group", [*GROUPS, EVERYTHING_ELSE])
def test_schemathesis_finds_nothing(fuzzed, run_settings, tmp_path, group):
    settings, seed = run_settings
    print(f"Schemathesis seed: {seed} (replay with PARLEY_SCHEMATHESIS_SEED={seed})")
    if group == EVERYTHING_ELSE:
        selection = ["--exclude-tag-regex", tags_regex(tag for tags in GROUPS.values() for tag in tags)]
    else:
        selection = ["--include-tag-regex", tags_regex(GROUPS[group])]
    run = subprocess.run(
        [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(settings), "--no-color", "run",
         f"{fuzzed.base_url}/schema/openapi.json", *selection, "--checks", "all",
         "--exclude-checks", "positive_data_acceptance", "--max-response-time", "60", "--mode", "all",
         "--phases", PHASES, "--workers", "2",
         # a raw e-mail (message/rfc822), which Schemathesis cannot write; tests/integration/test_mail.py sends real ones
         "--exclude-path", "/api/mail/inbound"],
        capture_output=True, text=True, timeout=280, cwd=tmp_path)
    print(run.stdout[-30000:], run.stderr[-5000:])
    if group == EVERYTHING_ELSE and "No operations" in run.stdout + run.stderr:
        return  # every tag is in a group
    assert run.returncode == 0, f"Schemathesis found failures (seed {seed}); see the output above"
