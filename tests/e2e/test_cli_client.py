"""The command-line client against a live server: `parley login` through the suite's Chromium (the
sign-in page, the loopback redirect, the token stored 0600), logout revoking the token, every command,
`--watch` printing a new message, and the refusals (a revoked token, another organization's
conversation, usage errors)."""

from __future__ import annotations

import json
import os
import argparse
import queue
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from parley.cli import parser as cli_parser
from tests.support.browser import browser, ensure_debian_package, page  # noqa: F401
from tests.support.servers import make_server, make_tenant, token
from tests.support.documents_helpers import create as create_document, indexed
from tests.support.mcp_helpers import PASSWORD, browser as person, hidden_fields, login_code
from tests.support.receivers import Receiver
from tests.integration.test_docs_import import run_import
from tests.integration.test_mcp import seed_conversation

WAIT = 60


@pytest.fixture(scope="module")
def server(infra, tmp_path_factory):
    """This module's own server, delivering webhooks to a receiver on this machine."""
    running = make_server(infra, tmp_path_factory.mktemp("cli"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def http(server):
    with server.client() as client:
        yield client


class Cli:
    """`parley` as a subprocess with its own HOME and configuration directory, and no display."""

    def __init__(self, home: Path):
        self.home = home
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("PARLEY_") and k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
        self.env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONUNBUFFERED="1")

    @property
    def profile(self) -> Path:
        return self.home / ".config" / "parley" / "profiles" / "default.json"

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "parley.cli", *args], env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=WAIT * 2)

    def ok(self, *args: str, stdin: str | None = None) -> str:
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def start(self, *args: str) -> "Running":
        return Running(subprocess.Popen([sys.executable, "-m", "parley.cli", *args], env=self.env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE))


class Running:
    """A long-running command whose output lines are read as they come."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.lines: queue.Queue[tuple[str, str]] = queue.Queue()
        self.seen: list[str] = []
        for name, stream in (("out", proc.stdout), ("err", proc.stderr)):
            threading.Thread(target=self._read, args=(name, stream), daemon=True).start()

    def _read(self, name: str, stream) -> None:
        for line in stream:
            self.lines.put((name, line.rstrip("\n")))

    def wait_for_line(self, matches, stream: str = "out") -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                name, line = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, f"exited {self.proc.returncode}: {self.seen}"
                continue
            self.seen.append(f"{name}: {line}")
            if name == stream and matches(line):
                return line
        raise AssertionError(f"no such line in time: {self.seen}")

    def finish(self) -> int:
        return self.proc.wait(timeout=WAIT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=WAIT)


def sign_in_without_chromium(address: str, email: str) -> None:
    """A person at the page, as plain HTTP (the browser test below does it with Chromium): sign in,
    allow, and follow the redirect back to the CLI's loopback listener."""
    parts = urlsplit(address)
    with person(f"{parts.scheme}://{parts.netloc}") as http:
        to_consent = http.get(address)
        sign_in = http.get(to_consent.headers["location"])
        choose = http.post("/oauth/consent", data={**hidden_fields(sign_in.text), "email": email, "password": PASSWORD})
        org = choose.text.split('name="org" value="', 1)[1].split('"', 1)[0]
        done = http.post("/oauth/consent", data={**hidden_fields(choose.text), "org": org, "decision": "allow"})
        assert done.status_code == 303, done.text
        back = httpx.get(done.headers["location"])
        assert back.status_code == 200 and "close this window" in back.text


def logged_in(tmp_path: Path, server, tenant) -> Cli:
    cli = Cli(tmp_path)
    login = cli.start("login", "--no-browser", "--url", server.base_url)
    address = login.wait_for_line(lambda line: line.startswith("http"), "err")
    sign_in_without_chromium(address, tenant.operator_email)
    assert login.finish() == 0, login.seen
    return cli


def stored_token(cli: Cli) -> str:
    return json.loads(cli.profile.read_text())["token"]


def test_login_through_the_browser_stores_a_working_token(server, http, tenant, page, tmp_path):  # noqa: F811
    cli = Cli(tmp_path)
    login = cli.start("login", "--no-browser", "--url", server.base_url)
    address = login.wait_for_line(lambda line: line.startswith("http"), "err")
    query = parse_qs(urlsplit(address).query)
    assert query["code_challenge_method"] == ["S256"] and query["state"][0] and query["code_challenge"][0]
    assert urlsplit(query["redirect_uri"][0]).hostname == "127.0.0.1"
    page.goto(address)
    assert page.title().startswith("Sign in to Parley from the command line")
    page.fill('input[name="email"]', tenant.operator_email)
    page.fill('input[name="password"]', PASSWORD)
    page.click('button[type="submit"]')
    page.click('button[value="allow"]')
    page.wait_for_selector("text=close this window")
    assert login.finish() == 0, login.seen
    assert urlsplit(page.url).hostname == "127.0.0.1"  # the loopback redirect, received by the CLI
    assert tenant.operator_email in login.wait_for_line(lambda line: line.startswith("Logged in"))

    assert stat.S_IMODE(cli.profile.stat().st_mode) == 0o600
    secret = stored_token(cli)
    assert secret not in address and secret not in "\n".join(login.seen)  # never in a URL or the output
    me = http.get("/api/operators/me", headers=token(secret))
    assert me.status_code == 200 and me.json()["email"] == tenant.operator_email
    whoami = json.loads(cli.ok("whoami", "--json"))
    assert (whoami["url"], whoami["email"], whoami["organizationId"]) == (
        server.base_url, tenant.operator_email, str(tenant.org_id))
    assert tenant.operator_email in cli.ok("whoami")


def test_logout_revokes_the_token_on_the_server(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    secret = stored_token(cli)
    assert http.get("/api/operators/me", headers=token(secret)).status_code == 200
    cli.ok("logout")
    assert http.get("/api/operators/me", headers=token(secret)).status_code == 401
    assert not cli.profile.exists()
    after = cli.run("whoami")
    assert after.returncode == 1 and "parley login" in after.stderr


def test_a_revoked_token_is_refused_with_the_servers_detail(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    assert http.delete("/api/operators/sessions/current", headers=token(stored_token(cli))).status_code == 200
    refused = cli.run("conversations")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("parley: 401: ")
    cli.ok("logout")  # already revoked on the server: logging out forgets it here
    assert not cli.profile.exists()


def test_a_replayed_login_code_revokes_the_token_it_gave(server, http, tenant):
    """The code of a `resource=/api` request is used once: replaying it revokes the operator token."""
    form = login_code(http, server.base_url, tenant.operator_email, tenant.org_id)
    first = http.post("/oauth/token", data=form)
    assert first.status_code == 200 and "refresh_token" not in first.json()
    issued = first.json()["access_token"]
    assert http.get("/api/operators/me", headers=token(issued)).status_code == 200
    assert http.post("/oauth/token", data=form).status_code == 400
    deadline = time.monotonic() + WAIT
    while http.get("/api/operators/me", headers=token(issued)).status_code != 401:
        assert time.monotonic() < deadline, "the replay did not revoke the token"
        time.sleep(0.2)


def test_the_commands_against_a_live_server(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    conversation = seed_conversation(http, tenant, "My order never arrived")

    inbox = json.loads(cli.ok("conversations", "--json"))
    assert conversation in [c["_id"] for c in inbox["conversations"]] and inbox["counts"]["unresolved"] >= 1
    assert conversation in cli.ok("conversations", "--website", tenant.website_name, "--filter", "unresolved")

    cli.ok("reply", conversation, "-", stdin="Sorry! It ships today.\n")
    cli.ok("note", conversation, "Customer is upset, follow up Friday")
    transcript = cli.ok("conversation", conversation)
    assert "customer: My order never arrived" in transcript
    assert "operator: Sorry! It ships today." in transcript
    assert "note: Customer is upset, follow up Friday" in transcript
    messages = json.loads(cli.ok("conversation", conversation, "--json"))["messages"]
    assert [m["internal"] for m in messages] == [False, False, True]

    assert json.loads(cli.ok("resolve", conversation, "--json"))["resolved"] is True
    resolved = json.loads(cli.ok("conversations", "--json", "--filter", "resolved"))
    assert conversation in [c["_id"] for c in resolved["conversations"]]
    assert json.loads(cli.ok("reopen", conversation, "--json"))["resolved"] is False

    create_document(http, tenant, title="Shipping times", content="Orders ship within two days.", published=True)
    indexed(server)
    matches = json.loads(cli.ok("docs", "search", "when does my order ship", "--json"))
    assert [m["title"] for m in matches][:1] == ["Shipping times"]
    assert "Shipping times" in cli.ok("docs", "search", "shipping")

    with Receiver() as receiver:
        subscription = http.post("/api/webhooksubscriptions", headers=tenant.operator, json={
            "websiteId": str(tenant.website_id), "url": receiver.url, "events": ["message.created"]})
        assert subscription.status_code == 200, subscription.text
        subscription = subscription.json()
        seed_conversation(http, tenant, "Another question")
        receiver.wait_for(1)
        deadline = time.monotonic() + WAIT
        while not json.loads(cli.ok("webhooks", "deliveries", subscription["_id"], "--json"))["items"]:
            assert time.monotonic() < deadline, "no delivery listed"
            time.sleep(0.3)
    assert "message.created" in cli.ok("webhooks", "deliveries", subscription["_id"])

    tail = cli.start("events", "tail", "--types", "MessageCreated", "--json")
    try:
        tail.wait_for_line(lambda text: text.startswith("Following"), "err")
        written = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": conversation, "content": "tail me", "from": "operator"}).json()
        first = json.loads(tail.wait_for_line(lambda text: text.startswith("{")))
        assert (first["type"], first["data"]["messageId"]) == ("MessageCreated", written["_id"])  # from now on
    finally:
        tail.stop()


def test_operators_invite_prints_the_link_to_hand_over(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    email = f"cli-invitee-{uuid.uuid4().hex[:8]}@example.com"
    url = cli.ok("operators", "invite", email, "--role", "admin").strip()
    assert "/app/#/invite/" in url
    accepted = http.post(f"/api/invitations/{url.rsplit('/', 1)[1]}/accept",
                         json={"displayName": "Cli", "password": "a long passphrase"})
    assert accepted.status_code == 200, accepted.text
    me = http.get("/api/operators/me", headers=token(accepted.json()["token"])).json()
    assert (me["email"], me["role"]) == (email, "admin")


def test_watch_prints_a_new_message(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    conversation = seed_conversation(http, tenant, "First question")
    watch = cli.start("conversations", "--watch")
    try:
        watch.wait_for_line(lambda line: line.startswith(conversation))
        said = f"Are you there? {uuid.uuid4().hex[:6]}"
        assert http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": conversation, "content": said, "from": "customer"}).status_code == 200
        line = watch.wait_for_line(lambda text: said in text)
        assert conversation in line and "from customer" in line
    finally:
        watch.stop()


def test_short_ids_visitor_names_replies_read_and_notes_marked(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    conversation = seed_conversation(http, tenant, "Where is my parcel?")
    customer = http.get(f"/api/conversations/{conversation}", headers=tenant.operator).json()["customerId"]
    assert http.put(f"/api/customers/{customer}", headers=tenant.operator,
                    json={"nickname": "Ada Lovelace"}).status_code == 200
    row = next(line for line in cli.ok("conversations").splitlines() if line.startswith(conversation))
    assert "Ada Lovelace" in row

    short = conversation[:13]  # as a person copies it: 01a218f4-0825
    assert "customer: Where is my parcel?" in cli.ok("conversation", short)
    assert "Ada Lovelace" in cli.ok("conversation", short)
    cli.ok("reply", short, "On its way")
    unread = json.loads(cli.ok("conversations", "--json", "--filter", "unread"))
    assert conversation not in [c["_id"] for c in unread["conversations"]]

    nowhere = cli.run("conversation", "ffffffff-ffff")
    assert nowhere.returncode == 2 and "no conversation" in nowhere.stderr
    ambiguous = cli.run("resolve", "")
    assert ambiguous.returncode == 2

    watch = cli.start("conversations", "--watch")
    try:
        watch.wait_for_line(lambda line: line.startswith(conversation))
        cli.ok("note", short, "check the courier")
        line = watch.wait_for_line(lambda text: "check the courier" in text)
        assert "an internal note: check the courier" in line and "from operator" not in line
    finally:
        watch.stop()


def test_refusals_and_usage_errors(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    elsewhere = make_tenant(server)
    foreign = seed_conversation(http, elsewhere, "Private to the other organization")
    for args in (("conversation", foreign), ("reply", foreign, "hi"), ("resolve", foreign)):
        refused = cli.run(*args)
        assert refused.returncode == 1, (args, refused.stdout, refused.stderr)
        assert refused.stderr.startswith("parley: 404: ") and "Private" not in refused.stdout + refused.stderr
    messages = http.get("/api/messages", headers=elsewhere.operator, params={"conversationId": foreign}).json()
    assert [m["content"] for m in messages] == ["Private to the other organization"]  # untouched

    assert cli.run("conversations", "--filter", "nonsense").returncode == 2
    assert cli.run("reply").returncode == 2
    assert cli.run("reply", foreign, "-", stdin="  \n").returncode == 1  # nothing to send
    tenant.add_website()
    two = cli.run("conversations")
    assert two.returncode == 2 and "--website" in two.stderr
    unknown = cli.run("whoami", "--profile", "nobody")
    assert unknown.returncode == 1 and "not logged in" in unknown.stderr


def leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) of every command that runs something, walking the parser itself."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield path, parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from leaf_commands(sub, (*path, name))


def test_every_command_has_help_with_an_example(tmp_path):
    leaves = dict(leaf_commands(cli_parser()))
    assert {("docs", "import"), ("completion",), ("admin", "website", "agent"), ("events", "tail")} <= set(leaves)
    for path, command in leaves.items():
        example = command.format_help().partition("\nexample:\n  ")[2]
        assert f"parley {' '.join(path)} " in example.splitlines()[0] + " ", path
    shown = Cli(tmp_path).ok("docs", "import", "--help")  # as a person sees it
    assert "\nexample:\n  parley docs import " in shown


def completed_in_bash(script: Path, line: str) -> list[str]:
    """What bash's completion offers for `line` (the cursor at its end), with the script loaded."""
    words = line.split(" ")
    done = subprocess.run(["bash", "--norc", "-c", 'source "$1"; shift; COMP_WORDS=("$@"); '
                           'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _parley; printf "%s\\n" "${COMPREPLY[@]}"',
                           "bash", str(script), *words], capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.split()


def test_bash_completion_is_generated_from_the_parser(tmp_path):
    script = tmp_path / "parley.bash"
    script.write_text(Cli(tmp_path).ok("completion", "bash"))
    assert completed_in_bash(script, "parley conv") == ["conversations", "conversation"]
    top = next(a for a in cli_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert completed_in_bash(script, "parley ") == list(top.choices)  # every command, none made up
    assert completed_in_bash(script, "parley docs ") == ["import", "search"]
    assert set(completed_in_bash(script, "parley docs import ./help --")) == {
        "--help", "--data-dir", "--website", "--locale", "--publish", "--profile"}
    assert completed_in_bash(script, "parley conversations --filter un") == ["unread", "unresolved", "unassigned"]
    # an option's value is not read as a command: `docs` here is a website's name
    assert completed_in_bash(script, "parley conversations --website docs --w") == ["--website", "--watch"]
    assert completed_in_bash(script, "parley completion ") == ["bash", "zsh"]
    assert completed_in_bash(script, "parley admin operator add") == ["add-org"]


ZSH_SESSION = r"""
zmodload zsh/zpty
zpty -b z 'zsh -f -i'
zpty -w z "autoload -U compinit; compinit -u -D; source ${(q)1}; parley() { print -r -- \"ARGS[\$*]\" }; print READY"
zpty -r -m z out '*READY*'
zpty -w -n z "$2"$'\n'
zpty -r -m z out '*ARGS\[*\]*'
print -r -- "${${out##*ARGS\[}%%\]*}"
zpty -d z
"""


def test_zsh_completion_completes_in_a_real_zsh(tmp_path):
    """Typed into an interactive zsh (zpty) with the script loaded: each Tab completes a word."""
    zsh = str(ensure_debian_package(Path("/usr/bin/zsh"), "zsh"))
    script = tmp_path / "_parley"
    script.write_text(Cli(tmp_path).ok("completion", "zsh"))
    assert script.read_text().startswith("#compdef parley\n")
    for typed, line in (("parley docs im\t--pub\t", "docs import --publish"),
                        ("parley conversations --filter unres\t", "conversations --filter unresolved"),
                        ("parley admin oa\tro\t", "admin oauth rotate-key")):
        done = subprocess.run([zsh, "-f", "-c", ZSH_SESSION, "zsh", str(script), typed],
                              capture_output=True, text=True, timeout=WAIT)
        assert done.stdout.strip() == line, (typed, done.stdout, done.stderr)


def test_docs_import_over_http(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path / "home", server, tenant)
    folder = tmp_path / "help"
    (folder / "billing").mkdir(parents=True)
    (folder / "billing" / "refunds.md").write_text("# Refund policy\n\nWithin 30 days.\n")
    (folder / "welcome.md").write_text("No heading, just <b>text</b>.\n")
    imported = ["docs", "import", str(folder), "--website", tenant.website_name, "--publish"]

    assert json.loads(cli.ok(*imported)) == {"files": 2, "created": 2, "updated": 0, "unchanged": 0}
    assert json.loads(cli.ok(*imported)) == {"files": 2, "created": 0, "updated": 0, "unchanged": 2}
    (folder / "billing" / "refunds.md").write_text("# Refund policy\n\nWithin 60 days.\n")
    assert json.loads(cli.ok(*imported)) == {"files": 2, "created": 0, "updated": 1, "unchanged": 1}
    docs = http.get("/api/documents", params={"websiteId": str(tenant.website_id)}, headers=tenant.operator).json()
    by_title = {d["title"]: d for d in docs if d["title"] in ("Refund policy", "welcome")}
    assert len(by_title) == 2 and len([d for d in docs if d["title"] == "Refund policy"]) == 1  # no duplicate
    assert by_title["Refund policy"]["content"] == "Within 60 days." and by_title["Refund policy"]["published"]
    assert by_title["Refund policy"]["category"] == "billing"
    assert by_title["welcome"]["content"] == "No heading, just <b>text</b>."
    # the same key as the import on the server's machine: that one finds these documents too
    assert run_import(server, folder, "--website", str(tenant.website_id), "--publish") == {
        "files": 2, "created": 0, "updated": 0, "unchanged": 2}

    missing = cli.run("docs", "import", str(tmp_path / "nowhere"), "--website", tenant.website_name)
    assert missing.returncode == 2 and "is not a directory" in missing.stderr
    both = cli.run("docs", "import", str(folder), "--website", "w", "--data-dir", ".", "--profile", "default")
    assert both.returncode == 2
    (folder / "long.md").write_text("# " + "x" * 301 + "\n")
    refused = cli.run(*imported)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "parley: 400: " in refused.stderr and "title" in refused.stderr
    elsewhere = make_tenant(server)
    foreign = cli.run("docs", "import", str(folder), "--website", str(elsewhere.website_id))
    assert foreign.returncode == 1 and "parley: 404: " in foreign.stderr
    assert http.get("/api/documents", headers=elsewhere.operator).json() == []


def test_assign_to_me_to_a_colleague_and_a_team_then_unassign(server, http, tenant, tmp_path):
    cli = logged_in(tmp_path, server, tenant)
    conversation = seed_conversation(http, tenant, "Who takes this one?")
    colleague = tenant.add_operator("agent")
    team = http.post("/api/teams", headers=tenant.operator, json={"name": "Billing"}).json()
    me = http.get("/api/operators/me", headers=tenant.operator).json()["_id"]
    assert f"assigned to {me}" in cli.ok("assign", conversation[:13])
    mine = json.loads(cli.ok("conversations", "--json", "--filter", "mine"))
    assert conversation in [c["_id"] for c in mine["conversations"]]
    assigned = json.loads(cli.ok("assign", conversation, colleague.email, "--team", "billing", "--json"))
    assert (assigned["assigneeId"], assigned["teamId"]) == (str(colleague.id), team["_id"])
    assert "is unassigned" in cli.ok("assign", conversation, "--unassign")
    shown = http.get(f"/api/conversations/{conversation}", headers=tenant.operator).json()
    assert (shown["assigneeId"], shown["teamId"]) == (None, None)
    nobody = cli.run("assign", conversation, "nobody@nowhere.example")
    assert nobody.returncode == 2 and "no operator" in nobody.stderr
