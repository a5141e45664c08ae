"""Running a workspace over HTTP, as the dashboard does: API keys, creating and configuring websites,
rotating a website's identity secret, and the organization's operators. Operator access tokens only;
a secret is in the answer that creates it, and never again."""

from __future__ import annotations

import msgspec
from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import apikeys, websites
from commands.admin import Created
from commands.principal import Principal
from events.ids import parse_id
from readapi.auth import ADMIN, OPERATOR, OPERATOR_ENROLLING, Authenticated, Decoded
from projections.views.collections import (API_KEYS, OPERATORS, WEBSITES, ApiKey, ApiKeyWithSecret, Collection, Operator, Website,
                                 WebsiteWithSecret, read_list, read_one)
from readapi.openapi import ID, NAME, ListOf, collection_query, describe
from readapi.routes.resources import one_response
from readapi.services import caught_up, json_response, run_command, services, written


async def created_record(request: Request, collection: Collection, principal: Principal, created: Created):
    await written(request, created)
    async with services(request).pool.connection() as conn:
        return await read_one(conn, collection, principal, created.id)


async def list_response(request: Request, principal: Principal, collection: Collection) -> Response:
    await caught_up(request)
    async with services(request).pool.connection() as conn:
        return json_response(await read_list(conn, collection, principal, request.query_params))


@describe("List the API keys", ADMIN, answer=ListOf(ApiKey), query=collection_query(API_KEYS),
          operation_id="listApiKeys")
@get("/api/apikeys")
async def list_keys(request: Request, principal: Authenticated) -> Response:
    return await list_response(request, principal, API_KEYS)


@describe("Create an API key; the answer alone carries its secret", ADMIN, body=apikeys.ApiKeyCreate,
          links={"revokeApiKey": {"keyId": ID}},
          answer=ApiKeyWithSecret, example={"name": "CRM sync", "scopes": ["customers:read", "customers:write"]},
          operation_id="createApiKey")
@post("/api/apikeys", status_code=200)
async def create_key(request: Request, principal: Authenticated, payload: Decoded[apikeys.ApiKeyCreate]) -> Response:
    created, secret = await run_command(request, apikeys.create_key, principal, payload)
    saved = await created_record(request, API_KEYS, principal, created)
    return json_response(ApiKeyWithSecret(**msgspec.structs.asdict(saved), secret=secret), created)


@describe("Revoke an API key", ADMIN, answer=ApiKey, operation_id="revokeApiKey")
@delete("/api/apikeys/{key_id:str}", status_code=200)
async def revoke_key(request: Request, principal: Authenticated, key_id: FromPath[str]) -> Response:
    created = await run_command(request, apikeys.revoke_key, principal, parse_id(key_id))
    return await one_response(request, API_KEYS, principal, created.id, created=created)


@describe("Create a website; the answer alone carries its identity secret", ADMIN,
          links={"getWebsite": {"websiteName": NAME}, "updateWebsite": {"websiteName": NAME},
                 "rotateWebsiteIdentitySecret": {"websiteName": NAME}},
          body=websites.WebsiteCreate, answer=WebsiteWithSecret, errors=(409,),
          example={"websiteName": "acme-help", "brandColor": "#1a2b3c"}, operation_id="createWebsite")
@post("/api/websites", status_code=200)
async def create_website(request: Request, principal: Authenticated,
                         payload: Decoded[websites.WebsiteCreate]) -> Response:
    created, secret = await run_command(request, websites.create_website, services(request).sealer, principal,
                                        payload)
    saved = await created_record(request, WEBSITES, principal, created)
    return json_response(WebsiteWithSecret(**msgspec.structs.asdict(saved), identity_secret=secret), created)


@describe("Change a website's settings (only the fields given)", ADMIN, body=websites.WebsiteSettings,
          answer=Website, example={"allowedOrigins": ["https://acme.example"]}, operation_id="updateWebsite")
@put("/api/websites/{website_name:str}")
async def update_website(request: Request, principal: Authenticated, payload: Decoded[websites.WebsiteSettings],
                         website_name: FromPath[str]) -> Response:
    created = await run_command(request, websites.update_settings, principal, website_name, payload)
    return await one_response(request, WEBSITES, principal, created.id, created=created)


@describe("Rotate a website's identity secret; the answer alone carries the new one", ADMIN,
          answer=WebsiteWithSecret, operation_id="rotateWebsiteIdentitySecret")
@post("/api/websites/{website_name:str}/identity-secret", status_code=200)
async def rotate_identity_secret(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    created, secret = await run_command(request, websites.rotate_identity_secret, services(request).sealer, principal,
                                        website_name)
    saved = await created_record(request, WEBSITES, principal, created)
    return json_response(WebsiteWithSecret(**msgspec.structs.asdict(saved), identity_secret=secret), created)


@describe("List the organization's operators", OPERATOR, answer=ListOf(Operator), query=collection_query(OPERATORS),
          operation_id="listOperators")
@get("/api/operators")
async def list_operators(request: Request, principal: Authenticated) -> Response:
    return await list_response(request, principal, OPERATORS)


@describe("The operator the token belongs to", OPERATOR_ENROLLING, answer=Operator,
          operation_id="getCurrentOperator")
@get("/api/operators/me")
async def current_operator(request: Request, principal: Authenticated) -> Response:
    return await one_response(request, OPERATORS, principal, principal.operator_id)


ROUTES = [list_keys, create_key, revoke_key, create_website, update_website, rotate_identity_secret, list_operators,
          current_operator]
