"""`parley projections rebuild NAME --until POSITION --schema NAME`: a read model as of a past position, in
a schema of its own, the live model untouched; and what it refuses."""

import json
import subprocess
import sys

import psycopg

from tests.support.history_seed import ndjson, post, story


def rebuild(server, tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parley.cli", "projections", "rebuild", "--data-dir",
                           str(tmp_path / "data"), *args], env=server.env, capture_output=True, text=True, timeout=120)


def rows(server, sql: str, *params):
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def test_a_read_model_as_of_a_past_position_in_its_own_schema(server, http, tenant, tmp_path):
    told = story(http, tenant)  # ends reopened: resolved, then not
    lines, _ = ndjson(http.get("/api/events", headers=tenant.operator,
                               params={"conversationId": told.conversation_id, "types": "ConversationUpdated"}))
    resolved_at = lines[0]["position"]  # the moment it was resolved
    post(http, "/api/messages", tenant.operator, {"conversationId": told.conversation_id, "content": "later",
                                                  "from": "operator"})
    live_position = rows(server, "SELECT position FROM parley_projection_positions WHERE name = 'core'")
    for _ in range(2):  # a second rebuild replaces the schema the first made
        result = rebuild(server, tmp_path, "core", "--until", str(resolved_at), "--schema", "as_resolved")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"rebuilt": {"core": resolved_at}, "schema": "as_resolved"}
    conversation = "SELECT resolved FROM {}.rm_conversations WHERE id = %s"
    messages = "SELECT count(*) FROM {}.rm_messages WHERE conversation_id = %s"
    assert rows(server, conversation.format("as_resolved"), told.conversation_id) == [(True,)]
    assert rows(server, messages.format("as_resolved"), told.conversation_id) == [(3,)]
    assert rows(server, "SELECT position FROM as_resolved.parley_projection_positions WHERE name = 'core'") == [
        (resolved_at,)]
    assert rows(server, conversation.format("public"), told.conversation_id) == [(False,)]  # live: reopened
    assert rows(server, messages.format("public"), told.conversation_id) == [(4,)]
    assert rows(server, "SELECT position FROM parley_projection_positions WHERE name = 'core'") >= live_position
    response = http.get(f"/api/conversations/{told.conversation_id}", headers=tenant.operator)
    assert response.json()["resolved"] is False


def test_what_a_rebuild_as_of_a_position_refuses(server, tmp_path):
    with psycopg.connect(server.database_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS analysts_own")
    for args, said in [
        (["core", "--until", "5", "--schema", "public"], "not a schema a rebuild may write"),
        (["core", "--until", "5", "--schema", "Bad-Name"], "not a schema a rebuild may write"),
        (["core", "--until", "5", "--schema", "analysts_own"], "was not made by a rebuild"),
        (["core", "--until", "5"], "go together"),
        (["core", "--schema", "x"], "go together"),
        (["search", "--until", "5", "--schema", "x"], "PostgreSQL read model"),
        (["--until", "5", "--schema", "x"], "PostgreSQL read model"),
    ]:
        result = rebuild(server, tmp_path, *args)
        assert result.returncode != 0 and said in result.stderr, (args, result.stderr)
    assert rows(server, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'analysts_own'") == [(0,)]
