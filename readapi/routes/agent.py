"""A website's AI agent: its configuration and status (operator tokens), the bearer secret's rotation,
and the visitor's results for the actions the agent offered (chat sessions)."""

from __future__ import annotations

import uuid

import msgspec
from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath

from commands import agent
from commands.admin import Created
from commands.errors import NotFound
from commands.principal import Principal
from projections.views.agent import AgentView, read_agent
from readapi.auth import ADMIN, OPERATOR, VISITOR, Authenticated, Decoded
from readapi.openapi import describe
from readapi.services import caught_up, json_response, run_command, services, written

PROJECTIONS = ("core", "agent")


class AgentWithSecret(AgentView):
    """Only the answer that first configures the agent carries its secret."""

    secret: str


class Secret(msgspec.Struct):
    secret: str


class ActionAccepted(msgspec.Struct, rename="camel"):
    tool_call_id: str
    conversation_id: uuid.UUID


class Removed(msgspec.Struct, rename="camel"):
    website_id: uuid.UUID
    deleted: bool


async def website(request: Request, principal: Principal, website_name: str) -> uuid.UUID:
    return await run_command(request, agent.website_by_name, principal, website_name)


async def view(request: Request, principal: Principal, website_id: uuid.UUID, created: Created | None) -> AgentView:
    if created is None:
        await caught_up(request, PROJECTIONS)
    else:
        await written(request, created, PROJECTIONS)
    async with services(request).pool.connection() as conn:
        found = await read_agent(conn, principal.org_id, website_id)
    if found is None:
        raise NotFound("this website has no agent")
    return found


@describe("Configure the website's AI agent (AG-UI); the answer that first configures it alone carries the "
          "bearer secret", ADMIN, body=agent.AgentSettings, answer=AgentWithSecret,
          example={"url": "https://agent.example.com/ag-ui", "greeting": "Hi! How can I help?"},
          operation_id="configureWebsiteAgent")
@put("/api/websites/{website_name:str}/agent")
async def configure_agent(request: Request, principal: Authenticated, payload: Decoded[agent.AgentSettings],
                          website_name: FromPath[str]) -> Response:
    website_id = await website(request, principal, website_name)
    created, secret = await run_command(request, agent.configure, services(request).sealer, principal.org_id,
                                        website_id, payload, services(request).settings.webhook_allow_private)
    saved = await view(request, principal, website_id, created)
    if secret is not None:
        saved = AgentWithSecret(**msgspec.structs.asdict(saved), secret=secret)
    return json_response(saved, created)


@describe("The website's AI agent and its status (never the secret)", OPERATOR, answer=AgentView,
          operation_id="getWebsiteAgent")
@get("/api/websites/{website_name:str}/agent")
async def get_agent(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    return json_response(await view(request, principal, await website(request, principal, website_name), None))


@describe("Remove the website's AI agent", ADMIN, answer=Removed, operation_id="removeWebsiteAgent")
@delete("/api/websites/{website_name:str}/agent", status_code=200)
async def remove_agent(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    website_id = await website(request, principal, website_name)
    created = await run_command(request, agent.remove, principal.org_id, website_id)
    await written(request, created, PROJECTIONS)
    return json_response(Removed(website_id, True), created)


@describe("Rotate the bearer secret sent to the website's AI agent; the answer carries the new one",
          ADMIN, answer=Secret, operation_id="rotateWebsiteAgentSecret")
@post("/api/websites/{website_name:str}/agent/secret", status_code=200)
async def rotate_secret(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    website_id = await website(request, principal, website_name)
    created, secret = await run_command(request, agent.rotate_secret, services(request).sealer, principal.org_id,
                                        website_id)
    await written(request, created, PROJECTIONS)
    return json_response(Secret(secret), created)


@describe("The visitor's result for an action the AI agent offered; it reaches the agent in a follow-up run",
          VISITOR, body=agent.ActionResult, answer=ActionAccepted, errors=(409,), example={"result": {"opened": True}},
          operation_id="submitChatActionResult")
@post("/api/chat/actions/{tool_call_id:str}/result", status_code=200)
async def action_result(request: Request, principal: Authenticated, payload: Decoded[agent.ActionResult],
                        tool_call_id: FromPath[str]) -> Response:
    created = await run_command(request, agent.action_result, principal, agent.parse_tool_call_id(tool_call_id),
                                payload)
    return json_response(ActionAccepted(tool_call_id, created.id), created)


ROUTES = [configure_agent, get_agent, remove_agent, rotate_secret, action_result]
