"""Ratings, reactions and resolving: every status code, the hidden notes, and the reaction race."""

import threading
import uuid

import httpx
import pytest

from commands import admin
from commands.deciders.message import MAX_REACTIONS
from tests.support.servers import token
from tests.support.visitors import start_session, visitor_with_conversation


@pytest.fixture
def chat_thread(http, tenant):
    """A visitor's conversation with a customer message, a team reply, an internal note, and an
    operator-only conversation about the same visitor."""
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    question = http.post("/api/chat/messages", headers=visitor.headers,
                         json={"conversationId": conversation_id, "content": "Does it work offline?"}).json()

    def team(conversation, content, **extra):
        response = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": conversation, "content": content, "from": "operator", **extra})
        assert response.status_code == 200, response.text
        return response.json()

    reply = team(conversation_id, "Yes, it does.")
    note = team(conversation_id, "They asked this twice", internal=True)
    hidden = http.post("/api/conversations", headers=tenant.operator, json={
        "websiteId": str(tenant.website_id), "customerId": visitor.customer_id, "operatorOnly": True}).json()
    hidden_message = team(hidden["_id"], "Escalate?")
    return {"visitor": visitor, "conversation_id": conversation_id, "question": question, "reply": reply,
            "note": note, "hidden": hidden, "hidden_message": hidden_message}


def stored(http, tenant, message_id):
    return http.get(f"/api/messages/{message_id}", headers=tenant.operator).json()


def rate(http, visitor, message_id, rating, website_id):
    return http.post(f"/api/messages/{message_id}/rating", headers=visitor.headers,
                     json={"websiteId": str(website_id), "rating": rating})


def react(http, visitor, message_id, emoji, website_id):
    return http.post(f"/api/messages/{message_id}/reaction/customer", headers=visitor.headers,
                     json={"websiteId": str(website_id), "emoji": emoji})


def test_visitor_rates_a_team_reply_and_rerating_overwrites(http, tenant, chat_thread):
    visitor, reply = chat_thread["visitor"], chat_thread["reply"]
    first = rate(http, visitor, reply["_id"], "unhappy", tenant.website_id)
    assert first.status_code == 200
    assert (first.json()["_id"], first.json()["rating"]) == (reply["_id"], "unhappy")
    assert first.json()["ratingTime"]
    second = rate(http, visitor, reply["_id"], "happy", tenant.website_id).json()
    assert second["rating"] == "happy" and second["ratingTime"] >= first.json()["ratingTime"]
    assert stored(http, tenant, reply["_id"])["rating"] == "happy"


def test_rating_refusals(http, tenant, other_tenant, chat_thread):
    visitor, reply = chat_thread["visitor"], chat_thread["reply"]
    assert rate(http, visitor, reply["_id"], "ecstatic", tenant.website_id).status_code == 400
    assert rate(http, visitor, reply["_id"], None, tenant.website_id).status_code == 400
    assert http.post(f"/api/messages/{reply['_id']}/rating", headers=visitor.headers,
                     json={"rating": "happy"}).status_code == 400
    # not rateable in this session: its own message, a note, an operator-only conversation, a stranger's
    stranger, _ = visitor_with_conversation(http, tenant)
    for message_id, who in ((chat_thread["question"]["_id"], visitor), (chat_thread["note"]["_id"], visitor),
                            (chat_thread["hidden_message"]["_id"], visitor), (reply["_id"], stranger),
                            (str(uuid.uuid4()), visitor), ("junk", visitor)):
        assert rate(http, who, message_id, "happy", tenant.website_id).status_code == 404
    assert rate(http, visitor, reply["_id"], "happy", other_tenant.website_id).status_code == 404
    # no API key or operator token
    for headers in (tenant.operator, tenant.key()):
        assert http.post(f"/api/messages/{reply['_id']}/rating", headers=headers,
                         json={"websiteId": str(tenant.website_id), "rating": "happy"}).status_code == 403
    assert http.post(f"/api/messages/{reply['_id']}/rating",
                     json={"websiteId": str(tenant.website_id), "rating": "happy"}).status_code == 401
    assert stored(http, tenant, reply["_id"])["rating"] is None
    assert stored(http, tenant, chat_thread["note"]["_id"])["rating"] is None


def test_operator_rating(http, tenant, other_tenant, chat_thread):
    url = f"/api/messages/{chat_thread['reply']['_id']}/rating/operator"
    response = http.post(url, headers=tenant.operator, json={"rating": "neutral"})
    assert response.status_code == 200
    assert (response.json()["operatorRating"], response.json()["internal"]) == ("neutral", False)
    assert response.json()["operatorRatingTime"] and response.json()["rating"] is None
    assert http.post(url, headers=tenant.operator, json={"rating": "meh"}).status_code == 400
    assert http.post(url, headers=tenant.key(), json={"rating": "happy"}).status_code == 403
    assert http.post(url, headers=chat_thread["visitor"].headers, json={"rating": "happy"}).status_code == 403
    assert http.post(url, headers=other_tenant.operator, json={"rating": "happy"}).status_code == 404
    assert stored(http, tenant, chat_thread["reply"]["_id"])["operatorRating"] == "neutral"


def test_the_team_rating_never_stands_for_the_visitor_rating(http, tenant, chat_thread):
    """The visitor's `rating` and the team's `operatorRating` are kept apart, in the message as it is now and
    in the message as of any past position (history), whichever comes last."""
    reply_id = chat_thread["reply"]["_id"]
    visitor_rated = rate(http, chat_thread["visitor"], reply_id, "unhappy", tenant.website_id)
    assert visitor_rated.status_code == 200
    team_rated = http.post(f"/api/messages/{reply_id}/rating/operator", headers=tenant.operator,
                           json={"rating": "happy"})
    assert team_rated.status_code == 200
    now = stored(http, tenant, reply_id)
    assert (now["rating"], now["operatorRating"]) == ("unhappy", "happy")
    # what the visitor's own transcript shows is their rating, never the team's
    assert visitor_rated.json()["rating"] == "unhappy"
    as_of = http.get("/api/messages", headers=tenant.operator, params={
        "conversationId": chat_thread["conversation_id"], "asOf": team_rated.headers["Parley-Position"]}).json()
    folded = next(m for m in as_of if m["_id"] == reply_id)
    assert (folded["rating"], folded["operatorRating"]) == ("unhappy", "happy")
    before_team = http.get("/api/messages", headers=tenant.operator, params={
        "conversationId": chat_thread["conversation_id"], "asOf": visitor_rated.headers["Parley-Position"]}).json()
    assert next(m for m in before_team if m["_id"] == reply_id)["operatorRating"] is None


@pytest.mark.parametrize("emoji", ["👍", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "1️⃣"])
def test_a_single_emoji_of_any_shape_is_accepted(http, tenant, chat_thread, emoji):
    response = react(http, chat_thread["visitor"], chat_thread["reply"]["_id"], emoji, tenant.website_id)
    assert response.status_code == 200
    assert response.json() == {"messageId": chat_thread["reply"]["_id"],
                               "reactions": [{"emoji": emoji, "from": "customer"}]}


@pytest.mark.parametrize("value", ["👍👍", "a", "", "👍 ", ":thumbsup:", "ok👍", 1])
def test_anything_but_one_emoji_is_400_and_changes_nothing(http, tenant, chat_thread, value):
    message_id = chat_thread["reply"]["_id"]
    assert react(http, chat_thread["visitor"], message_id, value, tenant.website_id).status_code == 400
    assert http.post(f"/api/messages/{message_id}/reaction/operator", headers=tenant.operator,
                     json={"emoji": value}).status_code == 400
    assert stored(http, tenant, message_id)["reactions"] == []


def test_one_reaction_per_person_replaced_and_cleared(http, tenant, chat_thread):
    visitor, message_id = chat_thread["visitor"], chat_thread["reply"]["_id"]
    react(http, visitor, message_id, "👍", tenant.website_id)
    team = http.post(f"/api/messages/{message_id}/reaction/operator", headers=tenant.operator, json={"emoji": "🎉"})
    assert team.status_code == 200
    assert [(r["emoji"], r["from"]) for r in team.json()["reactions"]] == [("👍", "customer"), ("🎉", "operator")]
    replaced = react(http, visitor, message_id, "❤️", tenant.website_id).json()
    assert replaced["reactions"] == [{"emoji": "🎉", "from": "operator"}, {"emoji": "❤️", "from": "customer"}]
    cleared = react(http, visitor, message_id, None, tenant.website_id).json()
    assert cleared["reactions"] == [{"emoji": "🎉", "from": "operator"}]
    team_cleared = http.post(f"/api/messages/{message_id}/reaction/operator", headers=tenant.operator,
                             json={"emoji": None}).json()
    assert team_cleared["reactions"] == []
    # the emoji key is required, even to clear
    assert http.post(f"/api/messages/{message_id}/reaction/operator", headers=tenant.operator,
                     json={}).status_code == 400


def test_visitor_sees_no_operator_details_in_reactions(http, tenant, chat_thread):
    message_id = chat_thread["reply"]["_id"]
    http.post(f"/api/messages/{message_id}/reaction/operator", headers=tenant.operator, json={"emoji": "🎉"})
    transcript = http.get("/api/chat/messages", params={"conversationId": chat_thread["conversation_id"]},
                          headers=chat_thread["visitor"].headers).json()
    assert [m["reactions"] for m in transcript if m["_id"] == message_id] == [[{"emoji": "🎉", "from": "operator"}]]
    assert "personId" in stored(http, tenant, message_id)["reactions"][0]


def test_operator_reacts_to_notes_and_operator_only_messages(http, tenant, other_tenant, chat_thread):
    for message in (chat_thread["note"], chat_thread["hidden_message"]):
        response = http.post(f"/api/messages/{message['_id']}/reaction/operator", headers=tenant.operator,
                             json={"emoji": "👀"})
        assert response.status_code == 200
        assert response.json()["reactions"][0]["emoji"] == "👀"
    url = f"/api/messages/{chat_thread['reply']['_id']}/reaction/operator"
    assert http.post(url, headers=other_tenant.operator, json={"emoji": "👀"}).status_code == 404
    assert http.post("/api/messages/nope/reaction/operator", headers=tenant.operator,
                     json={"emoji": "👀"}).status_code == 404
    assert http.post(url, headers=tenant.key(), json={"emoji": "👀"}).status_code == 403
    assert http.post(url, headers=chat_thread["visitor"].headers, json={"emoji": "👀"}).status_code == 403
    assert http.post(url, json={"emoji": "👀"}).status_code == 401


def test_visitor_reaction_refusals(http, tenant, other_tenant, chat_thread):
    visitor = chat_thread["visitor"]
    stranger = start_session(http, tenant.website_id)
    for message_id, who in ((chat_thread["note"]["_id"], visitor), (chat_thread["hidden_message"]["_id"], visitor),
                            (chat_thread["reply"]["_id"], stranger), (str(uuid.uuid4()), visitor)):
        assert react(http, who, message_id, "👍", tenant.website_id).status_code == 404
    assert react(http, visitor, chat_thread["reply"]["_id"], "👍", other_tenant.website_id).status_code == 404
    for headers in (tenant.operator, tenant.key()):
        assert http.post(f"/api/messages/{chat_thread['reply']['_id']}/reaction/customer", headers=headers,
                         json={"websiteId": str(tenant.website_id), "emoji": "👍"}).status_code == 403
    assert stored(http, tenant, chat_thread["note"]["_id"])["reactions"] == []
    # the visitor may react to their own message
    assert react(http, visitor, chat_thread["question"]["_id"], "🙏", tenant.website_id).status_code == 200


def operators(tenant, count):
    store = tenant.server.store()
    try:
        made = [admin.create_operator(store, tenant.org_id, f"op-{uuid.uuid4().hex[:8]}@example.com", "correct horse")
                for _ in range(count)]
    finally:
        store.close()
    tenant.server.wait_projected(made[-1][0].position)
    return [token(secret) for _, secret in made]


def test_a_message_holds_at_most_the_maximum_of_reactions(http, tenant, chat_thread):
    message_id = chat_thread["reply"]["_id"]
    team = operators(tenant, MAX_REACTIONS)
    for headers in team[:-1]:
        assert http.post(f"/api/messages/{message_id}/reaction/operator", headers=headers,
                         json={"emoji": "👍"}).status_code == 200
    assert react(http, chat_thread["visitor"], message_id, "🎉", tenant.website_id).status_code == 200
    full = http.post(f"/api/messages/{message_id}/reaction/operator", headers=team[-1], json={"emoji": "👍"})
    assert full.status_code == 409
    assert len(stored(http, tenant, message_id)["reactions"]) == MAX_REACTIONS
    # someone who already reacted may still change or clear theirs
    assert http.post(f"/api/messages/{message_id}/reaction/operator", headers=team[0],
                     json={"emoji": "🚀"}).status_code == 200
    assert http.post(f"/api/messages/{message_id}/reaction/operator", headers=team[0],
                     json={"emoji": None}).status_code == 200
    assert http.post(f"/api/messages/{message_id}/reaction/operator", headers=team[-1],
                     json={"emoji": "👍"}).status_code == 200


def test_racing_reactions_one_wins_the_other_gets_409_never_a_lost_update(http, server, tenant, chat_thread):
    team = operators(tenant, 6)
    conflicts = 0
    for attempt in range(20):
        message_id = http.post("/api/messages", headers=tenant.operator, json={
            "conversationId": chat_thread["conversation_id"], "content": f"race {attempt}", "from": "operator"}
        ).json()["_id"]
        start = threading.Barrier(len(team))
        results: dict[int, int] = {}

        def send(index: int, message_id: str, start: threading.Barrier, results: dict[int, int]) -> None:
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                start.wait()
                results[index] = client.post(f"/api/messages/{message_id}/reaction/operator",
                                             headers=team[index], json={"emoji": "👍"}).status_code

        threads = [threading.Thread(target=send, args=(i, message_id, start, results)) for i in range(len(team))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(results.values()) <= {200, 409}
        winners = sum(status == 200 for status in results.values())
        assert winners >= 1
        assert len(stored(http, tenant, message_id)["reactions"]) == winners  # every 200 is kept, no 409 is
        conflicts += len(team) - winners
        if conflicts:
            break
    assert conflicts, "twenty rounds of six simultaneous reactions never raced"


def conversation(http, tenant, conversation_id):
    return http.get(f"/api/conversations/{conversation_id}", headers=tenant.operator).json()


def test_resolving_is_idempotent_and_changes_nothing_else(http, tenant, other_tenant, chat_thread):
    conversation_id = chat_thread["conversation_id"]
    before = conversation(http, tenant, conversation_id)
    url = f"/api/conversations/{conversation_id}"
    resolved = http.patch(url, headers=tenant.operator, json={"resolved": True})
    assert resolved.status_code == 200
    assert resolved.json() == {**before, "resolved": True}
    again = http.patch(url, headers=tenant.operator, json={"resolved": True})
    assert again.json() == resolved.json()
    assert http.patch(url, headers=tenant.operator, json={"spam": True}).json() == {**before, "resolved": True,
                                                                                    "spam": True}
    reopened = http.patch(url, headers=tenant.operator, json={"resolved": False, "spam": False}).json()
    assert reopened == before
    assert http.patch(url, headers=tenant.operator, json={}).json() == before
    listed = http.get("/api/conversations", params={"resolved": "false", "websiteId": str(tenant.website_id)},
                      headers=tenant.operator).json()
    assert conversation_id in [c["_id"] for c in listed]


def test_resolving_refusals_leave_the_conversation_untouched(http, tenant, other_tenant, chat_thread):
    conversation_id = chat_thread["conversation_id"]
    before = conversation(http, tenant, conversation_id)
    url = f"/api/conversations/{conversation_id}"
    assert http.patch(url, headers=tenant.key(), json={"resolved": True}).status_code == 403
    assert http.patch(url, headers=chat_thread["visitor"].headers, json={"resolved": True}).status_code == 403
    assert http.patch(url, json={"resolved": True}).status_code == 401
    assert http.patch(url, headers=other_tenant.operator, json={"resolved": True}).status_code == 404
    assert http.patch(f"/api/conversations/{uuid.uuid4()}", headers=tenant.operator,
                      json={"resolved": True}).status_code == 404
    for body in ({"resolved": "yes"}, {"resolved": True, "customerId": str(uuid.uuid4())}, {"lastEditTime": 0}):
        response = http.patch(url, headers=tenant.operator, json=body)
        assert response.status_code == 400
        assert response.headers["content-type"] == "application/problem+json"
    assert conversation(http, tenant, conversation_id) == before
