"""Help documents: operators write them; API keys with `documents:read`, operators and visitors read them."""

from __future__ import annotations

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import documents
from commands.admin import Created
from commands.principal import Principal
from parley.ids import parse_id
from readapi.auth import authenticate
from readapi.collections import read_one
from readapi.document_search import search_documents
from readapi.documents import DOCUMENTS, list_documents
from readapi.listing import Listing, listing_response, register
from readapi.services import POSITION_HEADER, caught_up, decode_body, json_response, run_command, services, written

READ_MODELS = ("documents",)
SEARCH_READ_MODELS = ("documents", "search")


async def _document(request: Request, principal: Principal, created: Created) -> Response:
    await written(request, created, READ_MODELS)
    async with services(request).pool.connection() as conn:
        return json_response(await read_one(conn, DOCUMENTS, principal, created.id), created)


async def _search(request: Request, principal: Principal) -> Response:
    svc = services(request)
    await caught_up(request, SEARCH_READ_MODELS)
    async with svc.pool.connection() as conn:
        return json_response(await search_documents(conn, svc.settings, principal, request.query_params))


register(Listing("documents", "documents:read", list_documents, READ_MODELS))


@get("/api/documents")
async def list_documents_route(request: Request) -> Response:
    return await listing_response(request, "documents")


@get("/api/documents/search")
async def search_route(request: Request) -> Response:
    return await _search(request, await authenticate(request, scope="documents:read"))


@get("/api/chat/documents/search")
async def chat_search_route(request: Request) -> Response:
    """The widget's searchDocuments(query, locale): the visitor's website only."""
    return await _search(request, await authenticate(request, accept=("chat",)))


@get("/api/documents/{document_id:str}")
async def get_document(request: Request, document_id: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="documents:read")
    svc = services(request)
    await caught_up(request, READ_MODELS)
    async with svc.pool.connection() as conn:
        return json_response(await read_one(conn, DOCUMENTS, principal, parse_id(document_id)))


@post("/api/documents", status_code=200)
async def create_document(request: Request) -> Response:
    principal = await authenticate(request, accept=("operator",))
    body = await decode_body(request, documents.DocumentCreate)
    return await _document(request, principal, await run_command(request, documents.create_document, principal, body))


@put("/api/documents/{document_id:str}")
async def update_document(request: Request, document_id: FromPath[str]) -> Response:
    principal = await authenticate(request, accept=("operator",))
    body = await decode_body(request, documents.DocumentUpdate)
    created = await run_command(request, documents.update_document, principal, parse_id(document_id), body)
    return await _document(request, principal, created)


@delete("/api/documents/{document_id:str}", status_code=200)  # the Response below sets 204
async def delete_document(request: Request, document_id: FromPath[str]) -> Response:
    principal = await authenticate(request, accept=("operator",))
    created = await run_command(request, documents.delete_document, principal, parse_id(document_id))
    await written(request, created, READ_MODELS)
    return Response(b"", status_code=204, headers={POSITION_HEADER: str(created.position)})


ROUTES = [list_documents_route, search_route, chat_search_route, get_document, create_document, update_document,
          delete_document]
