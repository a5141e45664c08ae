"""Search across the organization's conversations: messages, internal notes (operators only) and customers."""

from __future__ import annotations

from litestar import Request, Response, get

from projections.views.conversation_search import SEARCH_QUERY, SearchPage, search_conversations
from readapi.auth import Auth, Authenticated
from readapi.openapi import describe
from readapi.services import caught_up, json_response, services

READ_MODELS = ("core", "conversation_search")


@describe("Search the conversations' messages, internal notes (operator tokens only) and customers' names, "
          "e-mail addresses and phone numbers, newest first; `snippet` is HTML-escaped text with the matches in "
          "`<mark>`. An API key needs `messages:read` as well", Auth(scope="conversations:read"),
          answer=SearchPage, query=SEARCH_QUERY, errors=(400, 403), operation_id="searchConversations", tag="search")
@get("/api/search")
async def search(request: Request, principal: Authenticated) -> Response:
    await caught_up(request, READ_MODELS)
    async with services(request).pool.connection() as conn:  # one statement: no transaction of its own
        return json_response(await search_conversations(conn, principal, request.query_params))


ROUTES = [search]
