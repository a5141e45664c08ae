"""Help documents: operators write them; API keys with `documents:read`, operators and visitors read them."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Annotated, Literal

import msgspec
from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import documents
from commands.admin import Created
from commands.documents import LOCALE_PATTERN
from commands.principal import Principal
from events.ids import parse_id
from readapi.auth import OPERATOR, VISITOR, Authenticated, Decoded
from projections.search import embedder_loaded
from projections.views.collections import read_one
from projections.views.document_search import search_documents
from projections.views.cursors import CursorPage
from projections.views.documents import DOCUMENTS, Document, DocumentImported, list_documents
from projections.views.document_search import Match
from readapi.listing import Listing, listing_response, register
from readapi.openapi import ID, ListOf, collection_query, describe, partial, query
from readapi.services import caught_up, json_response, no_content, run_command, services, written
from readapi.unavailable import Unavailable

READ_MODELS = ("documents",)
SEARCH_READ_MODELS = ("documents", "search")
PUBLISHED_DOCUMENTS = dataclasses.replace(DOCUMENTS, extra_where="published")
LIST_QUERY = collection_query(
    DOCUMENTS, query("search", str, "Only documents whose title holds every word of this."),
    query("pagination", Literal["cursor"], "`cursor` answers `{items, nextCursor}` pages instead of an array."),
    query("cursor", str, "With `pagination=cursor`: the previous page's `nextCursor`."))
SEARCH_QUERY = (
    query("query", Annotated[str, msgspec.Meta(min_length=1, max_length=1000, pattern=r"\S")], "What to look for.",
          required=True),
    query("locale", Annotated[str, msgspec.Meta(pattern=LOCALE_PATTERN)], "The documents' locale; `en` by default."),
    query("limit", Annotated[int, msgspec.Meta(ge=1)], "At most this many matches (10 by default, capped at 50)."),
    query("websiteId", uuid.UUID, "Only this website's documents."),
)


async def _document(request: Request, principal: Principal, created: Created) -> Response:
    await written(request, created, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(await read_one(conn, DOCUMENTS, principal, created.id), created)


async def _search(request: Request, principal: Principal) -> Response:
    svc = services(request)
    if reason := svc.search_unavailable():
        raise Unavailable(reason)
    await caught_up(request, SEARCH_READ_MODELS, "search is starting up" if not embedder_loaded(svc.settings.search)
                    else "search is still indexing the latest documents")
    async with svc.pool.connection() as conn:
        return json_response(await search_documents(conn, svc.settings.search, principal, request.query_params))


DOCUMENTS_LISTING = register(Listing("documents", "documents:read", list_documents, READ_MODELS))
READ = DOCUMENTS_LISTING.auth


@describe("List the help documents", READ, answer=(ListOf(Document), CursorPage[partial(Document)]), query=LIST_QUERY,
          operation_id="listDocuments")
@get("/api/documents")
async def list_documents_route(request: Request, principal: Authenticated) -> Response:
    return await listing_response(request, principal, DOCUMENTS_LISTING)


@describe("Search the published help documents", READ, answer=list[Match], query=SEARCH_QUERY,
          operation_id="searchDocuments")
@get("/api/documents/search")
async def search_route(request: Request, principal: Authenticated) -> Response:
    return await _search(request, principal)


@describe("Search the visitor's website's published help documents", VISITOR, answer=list[Match],
          query=SEARCH_QUERY[:3], operation_id="searchChatDocuments")
@get("/api/chat/documents/search")
async def chat_search_route(request: Request, principal: Authenticated) -> Response:
    """The widget's searchDocuments(query, locale): the visitor's website only."""
    return await _search(request, principal)


@describe("Read a published help document of the visitor's website", VISITOR, answer=Document, errors=(404,),
          operation_id="getChatDocument")
@get("/api/chat/documents/{document_id:str}")
async def chat_document(request: Request, principal: Authenticated, document_id: FromPath[str]) -> Response:
    """The widget opens a search result in its panel: published documents only, of the visitor's website."""
    await caught_up(request, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(await read_one(conn, PUBLISHED_DOCUMENTS, principal, parse_id(document_id)))


@describe("Read a help document", READ, answer=Document, operation_id="getDocument")
@get("/api/documents/{document_id:str}")
async def get_document(request: Request, principal: Authenticated, document_id: FromPath[str]) -> Response:
    svc = services(request)
    await caught_up(request, READ_MODELS)
    async with svc.pool.connection() as conn:
        return json_response(await read_one(conn, DOCUMENTS, principal, parse_id(document_id)))


@describe("Write a help document", OPERATOR, body=documents.DocumentCreate, answer=Document, errors=(404,),
          links={"getDocument": {"documentId": ID}, "updateDocument": {"documentId": ID},
                 "deleteDocument": {"documentId": ID}},
          example={"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10", "title": "Resetting your password",
                   "content": "Open Settings, then Security.", "locale": "en", "published": True},
          operation_id="createDocument")
@post("/api/documents", status_code=200)
async def create_document(request: Request, principal: Authenticated,
                          payload: Decoded[documents.DocumentCreate]) -> Response:
    created = await run_command(request, documents.create_document, principal, payload)
    return await _document(request, principal, created)


@describe("Import a help document from a file: created, or updated when it changed, found by its path",
          OPERATOR, body=documents.DocumentImport, answer=DocumentImported, errors=(404,),
          example={"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10", "source": "billing/refunds.md",
                   "title": "Refund policy", "content": "Within 30 days.", "category": "billing", "published": True},
          operation_id="importDocument")
@post("/api/documents/import", status_code=200)
async def import_document(request: Request, principal: Authenticated,
                          payload: Decoded[documents.DocumentImport]) -> Response:
    """`parley docs import DIR` from an operator's machine, one file a request; a re-import of an
    unchanged file writes nothing."""
    imported = await run_command(request, documents.import_sent_document, principal, payload)
    await written(request, imported.created, READ_MODELS)
    return json_response(DocumentImported(imported.created.id, imported.outcome), imported.created)


@describe("Change a help document (only the fields given)", OPERATOR, body=documents.DocumentUpdate,
          answer=Document, example={"published": False}, operation_id="updateDocument")
@put("/api/documents/{document_id:str}")
async def update_document(request: Request, principal: Authenticated, payload: Decoded[documents.DocumentUpdate],
                          document_id: FromPath[str]) -> Response:
    created = await run_command(request, documents.update_document, principal, parse_id(document_id), payload)
    return await _document(request, principal, created)


@describe("Delete a help document", OPERATOR, status=204, operation_id="deleteDocument")
@delete("/api/documents/{document_id:str}", status_code=200)  # the Response below sets 204
async def delete_document(request: Request, principal: Authenticated, document_id: FromPath[str]) -> Response:
    created = await run_command(request, documents.delete_document, principal, parse_id(document_id))
    return await no_content(request, created, READ_MODELS)


ROUTES = [list_documents_route, search_route, chat_search_route, chat_document, get_document, create_document,
          import_document, update_document, delete_document]
