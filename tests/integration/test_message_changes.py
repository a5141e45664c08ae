"""Editing and unsending messages through the API: who may, when, what every reader sees afterwards,
and that the original stays only in the history and the audit log."""

import time

from tests.support.history_seed import ndjson
from tests.support.servers import make_tenant
from tests.support.visitors import visitor_with_conversation
from tests.support.widget_pages import eventually


def team_says(http, headers, conversation_id, content):
    response = http.post("/api/messages", headers=headers,
                         json={"conversationId": conversation_id, "content": content, "from": "operator"})
    assert response.status_code == 200, response.text
    return response.json()


def visitor_transcript(http, visitor, conversation_id):
    response = http.get("/api/chat/messages", headers=visitor.headers, params={"conversationId": conversation_id})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_author_edits_and_deletes_and_the_visitor_never_sees_the_original(http, tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    agent = tenant.add_operator("agent")
    reply = team_says(http, agent.headers, conversation_id, "Your refund is **declined**.")
    edited = http.patch(f"/api/messages/{reply['_id']}", headers=agent.headers,
                        json={"content": "Your refund is **approved**."})
    assert edited.status_code == 200, edited.text
    assert (edited.json()["content"], edited.json()["contentHtml"]) == (
        "Your refund is **approved**.", "<p>Your refund is <strong>approved</strong>.</p>")
    assert edited.json()["editedAt"] and edited.json()["deleted"] is False
    [seen] = [m for m in visitor_transcript(http, visitor, conversation_id) if m["_id"] == reply["_id"]]
    assert seen["content"] == "Your refund is **approved**." and seen["editedAt"]

    deleted = http.delete(f"/api/messages/{reply['_id']}", headers=agent.headers)
    assert deleted.status_code == 200, deleted.text
    assert (deleted.json()["deleted"], deleted.json()["content"], deleted.json()["contentHtml"]) == (True, "", "")
    [seen] = [m for m in visitor_transcript(http, visitor, conversation_id) if m["_id"] == reply["_id"]]
    assert (seen["deleted"], seen["content"], seen["contentHtml"]) == (True, "", "")
    everything = str(visitor_transcript(http, visitor, conversation_id)) + str(
        http.get("/api/chat/conversations", headers=visitor.headers).json())
    assert "declined" not in everything and "approved" not in everything
    listed = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversation_id}).json()
    assert [m["content"] for m in listed if m["_id"] == reply["_id"]] == [""]

    # the history keeps every version, and the audit log says who changed what
    history, _ = ndjson(http.get("/api/events", headers=tenant.operator))
    text = str(history)
    assert "declined" in text and "approved" in text and "MessageEdited" in text and "MessageDeleted" in text
    log = http.get("/api/audit", headers=tenant.operator, params={"action": "message.edited"}).json()
    assert "declined" in str(log) and "approved" in str(log)
    # gone is gone: editing or deleting again answers 404
    assert http.patch(f"/api/messages/{reply['_id']}", headers=agent.headers,
                      json={"content": "again"}).status_code == 404


def test_another_agent_is_refused_an_admin_may_and_another_organization_sees_nothing(http, tenant, other_tenant):
    _, conversation_id = visitor_with_conversation(http, tenant)
    author, colleague, admin = (tenant.add_operator("agent"), tenant.add_operator("agent"),
                                tenant.add_operator("admin"))
    reply = team_says(http, author.headers, conversation_id, "Original")
    refused = http.patch(f"/api/messages/{reply['_id']}", headers=colleague.headers, json={"content": "Mine now"})
    assert refused.status_code == 403
    assert http.delete(f"/api/messages/{reply['_id']}", headers=colleague.headers).status_code == 403
    assert http.patch(f"/api/messages/{reply['_id']}", headers=other_tenant.operator,
                      json={"content": "x"}).status_code == 404
    assert http.delete(f"/api/messages/{reply['_id']}", headers=other_tenant.operator).status_code == 404
    bad = http.patch(f"/api/messages/{reply['_id']}", headers=author.headers, json={"content": ""})
    assert bad.status_code == 400
    assert http.get(f"/api/messages/{reply['_id']}", headers=tenant.operator).json()["content"] == "Original"
    by_admin = http.patch(f"/api/messages/{reply['_id']}", headers=admin.headers, json={"content": "Fixed"})
    assert by_admin.status_code == 200 and by_admin.json()["content"] == "Fixed"


def test_the_author_is_refused_outside_the_edit_window(short_edit_window_server):
    with short_edit_window_server.client() as http:
        tenant = make_tenant(short_edit_window_server)
        _, conversation_id = visitor_with_conversation(http, tenant)
        agent, admin = tenant.add_operator("agent"), tenant.add_operator("admin")
        reply = team_says(http, agent.headers, conversation_id, "Sent in haste")
        time.sleep(2.5)
        late = http.patch(f"/api/messages/{reply['_id']}", headers=agent.headers, json={"content": "Too late"})
        assert late.status_code == 403 and "seconds" in late.json()["detail"]
        assert http.delete(f"/api/messages/{reply['_id']}", headers=agent.headers).status_code == 403
        assert http.get(f"/api/messages/{reply['_id']}", headers=tenant.operator).json()["content"] == "Sent in haste"
        assert http.delete(f"/api/messages/{reply['_id']}", headers=admin.headers).status_code == 200


def test_the_visitor_deletes_their_last_unread_message_only(http, tenant):
    visitor, conversation_id = visitor_with_conversation(http, tenant)

    def says(content):
        response = http.post("/api/chat/messages", headers=visitor.headers,
                             json={"conversationId": conversation_id, "content": content})
        assert response.status_code == 200, response.text
        return response.json()

    first, last = says("My card number is 4111 1111 1111 1111"), says("oops")
    assert http.delete(f"/api/chat/messages/{first['_id']}", headers=visitor.headers).status_code == 409
    gone = http.delete(f"/api/chat/messages/{last['_id']}", headers=visitor.headers)
    assert gone.status_code == 200 and gone.json()["deleted"] is True and gone.json()["content"] == ""
    # now the first is the last one shown, and still unread
    assert http.delete(f"/api/chat/messages/{first['_id']}", headers=visitor.headers).status_code == 200
    reply = team_says(http, tenant.operator, conversation_id, "Team reply")
    assert http.delete(f"/api/chat/messages/{reply['_id']}", headers=visitor.headers).status_code == 404
    stranger, _ = visitor_with_conversation(http, tenant)
    third = says("read by the team")
    assert http.delete(f"/api/chat/messages/{third['_id']}", headers=stranger.headers).status_code == 404
    eventually(lambda: all(m["deleted"] for m in visitor_transcript(http, visitor, conversation_id)
                           if m["_id"] in (first["_id"], last["_id"])))
