"""A small, known history for the event-history tests: one conversation that goes through everything an
audit trail shows, and helpers to read NDJSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from tests.support.visitors import Visitor, visitor_with_conversation


@dataclass
class Story:
    visitor: Visitor
    conversation_id: str
    question: dict
    answer: dict
    note: dict


def post(http: httpx.Client, path: str, headers: dict, body: dict | None = None, method: str = "POST") -> dict:
    response = http.request(method, path, headers=headers, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def story(http: httpx.Client, tenant) -> Story:
    """A visitor asks, an operator answers and writes a note; the answer is read, rated and reacted to;
    the conversation is resolved and reopened."""
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    question = post(http, "/api/chat/messages", visitor.headers, {"conversationId": conversation_id, "content": "Hi?"})
    post(http, f"/api/messages/{question['_id']}/read", tenant.operator)
    answer = post(http, "/api/messages", tenant.operator,
                  {"conversationId": conversation_id, "content": "Hello!", "from": "operator"})
    note = post(http, "/api/messages", tenant.operator,
                {"conversationId": conversation_id, "content": "VIP", "from": "operator", "internal": True})
    post(http, f"/api/messages/{answer['_id']}/rating", visitor.headers,
         {"websiteId": str(tenant.website_id), "rating": "happy"})
    post(http, f"/api/messages/{answer['_id']}/reaction/operator", tenant.operator, {"emoji": "🎉"})
    post(http, f"/api/conversations/{conversation_id}", tenant.operator, {"resolved": True}, "PATCH")
    post(http, f"/api/conversations/{conversation_id}", tenant.operator, {"resolved": False}, "PATCH")
    return Story(visitor, conversation_id, question, answer, note)


def ndjson(response: httpx.Response) -> tuple[list[dict], dict | None]:
    """The event lines and the trailer (None when there is none)."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    if lines and "trailer" in lines[-1]:
        return lines[:-1], lines[-1]["trailer"]
    return lines, None
