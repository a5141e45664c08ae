"""Exports: `parley events export` (Parquet per type, JSON Lines) and `GET /api/events/export` (a zip),
read back with DuckDB; the five queries of docs/history.md on a seeded history, against answers worked
out by hand; and every secret and hash planted, exported in every format, and found in none."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import uuid
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import msgspec
import pyarrow.parquet as pq
import pytest

from commands import admin
from events import public
from events import types as ev
from events.store import Pending
from tests.support.servers import make_tenant, token
from tests.support.visitors import start_session

DOCS = Path(__file__).resolve().parents[2] / "docs" / "history.md"


def t(day: int, hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=timezone.utc)


@dataclass
class Seed:
    """Appends events with chosen times, each at its stream's next version."""

    store: object
    org_id: uuid.UUID
    versions: dict[uuid.UUID, int] = field(default_factory=dict)

    def add(self, stream_id: uuid.UUID, event_type, at: datetime, **fields) -> uuid.UUID:
        version = self.versions.get(stream_id, 0) + 1
        self.store.append(Pending(stream_id, version, event_type(org_id=self.org_id, at=at, **fields)))
        self.versions[stream_id] = version
        return stream_id

    def conversation(self, website_id: uuid.UUID, at: datetime) -> uuid.UUID:
        customer_id = self.add(uuid.uuid4(), ev.CustomerCreated, at, customer_id=uuid.uuid4(), website_id=website_id)
        conversation_id = uuid.uuid4()
        return self.add(conversation_id, ev.ConversationCreated, at, conversation_id=conversation_id,
                        website_id=website_id, customer_id=customer_id)

    def message(self, conversation_id, website_id, at, sender, internal=False) -> uuid.UUID:
        message_id = uuid.uuid4()
        return self.add(message_id, ev.MessageCreated, at, message_id=message_id, conversation_id=conversation_id,
                        website_id=website_id, content=f"{sender} says", sender=sender, internal=internal)

    def react(self, message_id, conversation_id, at, sender, person, emoji, now: list) -> None:
        self.add(message_id, ev.MessageReactionsChanged, at, message_id=message_id, conversation_id=conversation_id,
                 sender=sender, person_id=person, emoji=emoji,
                 reactions=tuple(ev.Reaction(e, s, p) for e, s, p in now))


@dataclass
class History:
    org_id: uuid.UUID
    operator: dict
    site_a: uuid.UUID
    site_b: uuid.UUID
    plaintexts: list[str]  # secrets handed out once, which no export may hold either


@pytest.fixture(scope="module")
def history(server, http) -> History:
    """Three conversations over two days on two websites, ratings, reactions and two webhook endpoints
    disabled for a while; and every kind of credential, hashed or not."""
    store = server.store()
    try:
        org = admin.create_org(store, "Analysts").id
        created, identity_secret = admin.create_website(store, server.sealer, org, f"a-{uuid.uuid4().hex[:8]}", "#000000")
        site_a = created.id
        site_b = admin.create_website(store, server.sealer, org, f"b-{uuid.uuid4().hex[:8]}", None)[0].id
        operator, operator_token = admin.create_operator(store, org, f"an-{uuid.uuid4().hex[:6]}@example.com",
                                                         "correct horse battery")
        _, key_secret = admin.create_api_key(store, org, ["events:read"], None, None)
        seed = Seed(store, org)
        c1 = seed.conversation(site_a, t(1, 9, 0))
        m1 = seed.message(c1, site_a, t(1, 9, 0, 10), "customer")
        seed.message(c1, site_a, t(1, 9, 1), "operator", internal=True)  # a note is not a reply
        m2 = seed.message(c1, site_a, t(1, 9, 2, 10), "operator")  # 120 s
        seed.add(m2, ev.MessageRated, t(1, 9, 5), message_id=m2, conversation_id=c1, rating="happy", sender="customer")
        op, visitor = uuid.uuid4(), uuid.uuid4()
        seed.react(m1, c1, t(1, 9, 3), "operator", op, "🎉", [("🎉", "operator", op)])
        seed.react(m2, c1, t(1, 9, 6), "customer", visitor, "👍", [("👍", "customer", visitor)])
        c2 = seed.conversation(site_b, t(1, 10, 0))
        seed.message(c2, site_b, t(1, 10, 0), "customer")
        m5 = seed.message(c2, site_b, t(1, 10, 10), "operator")  # 600 s
        seed.add(m5, ev.MessageRated, t(2, 8, 0), message_id=m5, conversation_id=c2, rating="sad", sender="customer")
        c3 = seed.conversation(site_a, t(2, 11, 0))
        seed.message(c3, site_a, t(2, 11, 0), "customer")
        m7 = seed.message(c3, site_a, t(2, 11, 1), "operator")  # 60 s
        seed.add(m7, ev.MessageRated, t(2, 11, 5), message_id=m7, conversation_id=c3, rating="happy", sender="customer")
        seed.react(m7, c3, t(2, 11, 6), "customer", visitor, "🎉", [("🎉", "customer", visitor)])
        seed.react(m7, c3, t(2, 11, 7), "customer", visitor, "😀", [("😀", "customer", visitor)])
        seed.react(m7, c3, t(2, 11, 8), "operator", op, "🎉", [("😀", "customer", visitor), ("🎉", "operator", op)])
        s1, s2 = uuid.uuid4(), uuid.uuid4()
        for sub, site in ((s1, site_a), (s2, site_b)):
            seed.add(sub, ev.WebhookSubscribed, t(1, 8, 0), subscription_id=sub, website_id=site, events=[],
                     url=f"https://hooks.example.com/services/{uuid.uuid4().hex}", secret=f"whsec_{uuid.uuid4().hex}")
        seed.add(s1, ev.WebhookDisabled, t(1, 12, 0), subscription_id=s1, reason="20 failures")
        seed.add(s1, ev.WebhookEnabled, t(1, 14, 30), subscription_id=s1)  # 2.5 h
        seed.add(s2, ev.WebhookDisabled, t(2, 8, 0), subscription_id=s2, reason="20 failures")
        seed.add(s2, ev.WebhookEnabled, t(2, 8, 45), subscription_id=s2)  # 45 min
        seed.add(s1, ev.WebhookDisabled, t(2, 20, 0), subscription_id=s1, reason="20 failures")  # still disabled
        server.wait_projected(store.head())
    finally:
        store.close()
    session = start_session(http, site_a)  # a visitor's session token, hashed in ChatSessionStarted
    return History(org, token(operator_token), site_a, site_b,
                   [identity_secret, operator_token, key_secret, session.token])


def hidden_values(server, org_id: uuid.UUID, plaintexts: list[str]) -> list[str]:
    """Every value the public shapes leave out of the organization's stored events (hashes, secrets, URLs),
    and the secrets handed out in the clear: none may appear in any export."""
    found = list(plaintexts)
    store = server.store()
    try:
        position = 0
        while batch := store.read(position, 1000):
            for recorded in batch:
                event, position = recorded.event, recorded.position
                shape = public.SHAPES.get(type(event))
                if event.org_id != org_id or shape is None:
                    continue
                shown = {f.name for f in msgspec.structs.fields(shape)} | {"org_id", "at"}
                found += [value for f in msgspec.structs.fields(event) if f.name not in shown
                          and isinstance(value := getattr(event, f.name), str)]
    finally:
        store.close()
    assert len(found) >= 10 and any(v.startswith("whsec_") for v in found)
    assert any(v.startswith("https://hooks.example.com/") for v in found)
    return found


def cli_export(server, out: Path, *options: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "parley.cli", "events", "export", "--data-dir", str(out.parent / "data"),
         "--out", str(out), *options], env=server.env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert json.loads((out / "manifest.json").read_text()) == manifest
    return manifest


def parquet_text(folder: Path) -> str:
    return json.dumps([pq.read_table(path).to_pylist() for path in sorted(folder.glob("*.parquet"))], default=str)


def docs_queries() -> list[str]:
    section = DOCS.read_text().split("### Five questions, answered in DuckDB")[1]
    return [query.strip().rstrip(";") for query in re.findall(r"```sql\n(.*?)```", section, re.S)]


def run(folder: Path, query: str) -> list[tuple]:
    with duckdb.connect() as db:
        db.execute(f"SET file_search_path = '{folder}'")
        return db.execute(f"SELECT CAST(COLUMNS(*) AS VARCHAR) FROM ({query})").fetchall()


def test_the_five_queries_of_the_docs_answer_what_was_worked_out_by_hand(server, history, tmp_path):
    out = tmp_path / "parquet"
    manifest = cli_export(server, out, "--org", str(history.org_id))
    assert manifest["files"]["MessageCreated.parquet"] == 7 and manifest["omitted"] == {"NameReserved": 3}
    per_day, first_response, ratings, reactions, disabled = docs_queries()
    assert run(out, per_day) == [("2026-03-01", "2"), ("2026-03-02", "1")]
    a, b = str(history.site_a), str(history.site_b)
    assert sorted(run(out, first_response)) == sorted([(a, "2", "90.0", "90.0"), (b, "1", "600.0", "600.0")])
    assert run(out, ratings) == [("2026-03-01", "happy", "1"), ("2026-03-02", "happy", "1"),
                                 ("2026-03-02", "sad", "1")]
    assert run(out, reactions) == [("🎉", "2"), ("👍", "1"), ("😀", "1")]
    rows = run(out, disabled)
    assert [row[3] for row in rows] == ["9000.0", "2700.0", None]
    assert rows[0][0] == rows[2][0] != rows[1][0]  # the first endpoint, disabled twice


def test_every_type_has_its_file_so_the_queries_run_on_a_history_without_them(server, tmp_path):
    """A new organization: no webhook ever disabled or re-enabled, no rating; each type's file is there all
    the same (its columns, no row), and the docs' five queries answer nothing rather than fail."""
    fresh = make_tenant(server)
    out = tmp_path / "fresh"
    manifest = cli_export(server, out, "--org", str(fresh.org_id))
    assert manifest["files"]["WebhookEnabled.parquet"] == 0
    assert sorted(path.name for path in out.glob("*.parquet")) == sorted(f"{name}.parquet" for name in public.SHAPE_BY_NAME)
    assert [run(out, query) for query in docs_queries()] == [[]] * 5
    assert pq.read_table(out / "WebhookEnabled.parquet").schema.names[:3] == ["position", "occurredAt", "streamId"]


def test_parquet_columns_are_typed(server, history, tmp_path):
    out = tmp_path / "typed"
    cli_export(server, out, "--org", str(history.org_id), "--types", "MessageCreated,MessageReactionsChanged")
    assert sorted(path.name for path in out.iterdir()) == ["MessageCreated.parquet", "MessageReactionsChanged.parquet",
                                                           "manifest.json"]
    with duckdb.connect() as db:
        columns = dict(db.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "
                                  f"'{out}/MessageCreated.parquet')").fetchall())
        reactions = db.execute(f"SELECT column_type FROM (DESCRIBE SELECT * FROM "
                               f"'{out}/MessageReactionsChanged.parquet') WHERE column_name = 'reactions'").fetchone()
    expected = {"position": "BIGINT", "occurredAt": "TIMESTAMP WITH TIME ZONE", "streamId": "VARCHAR",
                "messageId": "VARCHAR", "conversationId": "VARCHAR", "websiteId": "VARCHAR", "content": "VARCHAR",
                "sender": "VARCHAR", "replyTo": "VARCHAR", "internal": "BOOLEAN", "operatorId": "VARCHAR"}
    assert {name: columns[name] for name in expected} == expected  # later fields of the shape come after
    assert reactions == ("VARCHAR",)  # JSON text


def test_jsonl_export_is_the_events_api(server, http, history, tmp_path):
    out = tmp_path / "jsonl"
    manifest = cli_export(server, out, "--org", str(history.org_id), "--format", "jsonl")
    lines = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    response = http.get("/api/events", headers=history.operator, params={"until": manifest["lastPosition"]})
    assert [json.loads(line) for line in response.text.splitlines()[:-1]] == lines
    assert manifest["files"] == {"events.jsonl": len(lines)}


def test_http_export_streams_a_zip_of_the_same_files(server, http, history, tmp_path):
    local = tmp_path / "local"
    manifest = cli_export(server, local, "--org", str(history.org_id))
    response = http.get("/api/events/export", headers=history.operator, params={"format": "parquet"})
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        archive.extractall(tmp_path / "remote")
    assert sorted(p.name for p in (tmp_path / "remote").iterdir()) == sorted(p.name for p in local.iterdir())
    assert parquet_text(tmp_path / "remote") == parquet_text(local)
    assert json.loads((tmp_path / "remote" / "manifest.json").read_text()) == manifest
    refused = http.get("/api/events/export", headers=history.operator, params={"format": "csv"})
    assert refused.status_code == 400 and refused.json()["field"] == "format"


def test_bad_options_are_refused_and_write_nothing(server, history, tmp_path):
    out = tmp_path / "refused"
    result = subprocess.run(
        [sys.executable, "-m", "parley.cli", "events", "export", "--data-dir", str(tmp_path / "data"), "--out", str(out),
         "--org", str(history.org_id), "--types", "Nope"], env=server.env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and json.loads(result.stderr)["field"] == "types"
    assert not out.exists()


def test_no_secret_or_hash_in_any_export(server, http, history, tmp_path):
    secrets = hidden_values(server, history.org_id, history.plaintexts)
    texts = {"ndjson": http.get("/api/events", headers=history.operator).text}
    cli_export(server, tmp_path / "p", "--org", str(history.org_id))
    texts["cli parquet"] = parquet_text(tmp_path / "p")
    cli_export(server, tmp_path / "j", "--org", str(history.org_id), "--format", "jsonl")
    texts["cli jsonl"] = (tmp_path / "j" / "events.jsonl").read_text()
    for fmt in ("parquet", "jsonl"):
        response = http.get("/api/events/export", headers=history.operator, params={"format": fmt})
        folder = tmp_path / f"zip-{fmt}"
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            archive.extractall(folder)
        texts[f"http {fmt}"] = parquet_text(folder) + "".join(
            path.read_text() for path in folder.iterdir() if path.suffix != ".parquet")
    for name, text in texts.items():
        assert len(text) > 2000, name
        leaked = [secret for secret in secrets if secret in text]
        assert not leaked, f"{name} leaks {leaked}"


def test_a_progress_bar_on_a_terminal_only(server, history, tmp_path):
    import os
    import pty

    args = [sys.executable, "-m", "parley.cli", "events", "export", "--data-dir", str(tmp_path / "data"),
            "--out", str(tmp_path / "tty"), "--org", str(history.org_id)]
    pid, fd = pty.fork()
    if pid == 0:  # the child: the export, its output on the terminal
        os.execve(sys.executable, args, server.env)
    output = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the terminal closed with the child
            break
        if not chunk:
            break
        output += chunk
    assert os.waitpid(pid, 0)[1] == 0, output
    assert b"] " in output and b"#" * 30 in output and b"positions" in output
    assert b"#" not in subprocess.run(args, env=server.env, capture_output=True, timeout=120).stderr
