"""Websites, customers, conversations and messages: reads query the read models, writes call commands."""

from __future__ import annotations

from litestar import Request, Response, get, post, put
from litestar.params import FromPath

from commands import conversations, customers, messages
from commands.admin import Created
from commands.principal import Principal
from parley.ids import parse_id
from readapi.auth import authenticate, with_principal
from readapi.collections import CONVERSATIONS, CUSTOMERS, MESSAGES, WEBSITES, Collection, new_message, read_one
from readapi.inbox import read_conversations
from readapi.listing import Listing, collection_listing, listing_response, register
from readapi.services import caught_up, decode_body, json_response, run_command, services, written

register(collection_listing("websites", "websites:read", WEBSITES))
register(collection_listing("customers", "customers:read", CUSTOMERS))
register(Listing("conversations", "conversations:read", read_conversations, ("core", "inbox")))
register(collection_listing("messages", "messages:read", MESSAGES))


async def one_response(request: Request, collection: Collection, principal: Principal, record_id,
                       key_column: str = "id", created: Created | None = None) -> Response:
    svc = services(request)
    if created is None:
        await caught_up(request)
    else:
        await written(request, created)
    async with svc.pool.connection() as conn:
        return json_response(await read_one(conn, collection, principal, record_id, key_column), created)


@get("/api/websites")
async def list_websites(request: Request) -> Response:
    return await listing_response(request, "websites")


@get("/api/websites/{website_name:str}")
async def get_website(request: Request, website_name: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="websites:read")
    return await one_response(request, WEBSITES, principal, website_name, key_column="name")


@get("/api/customers")
async def list_customers(request: Request) -> Response:
    return await listing_response(request, "customers")


@post("/api/customers", status_code=200)
async def create_customer(request: Request) -> Response:
    principal = await authenticate(request, scope="customers:write")
    body = await decode_body(request, customers.CustomerCreate)
    created = await run_command(request, customers.create_customer, principal, body)
    return await one_response(request, CUSTOMERS, principal, created.id, created=created)


@get("/api/customers/{customer_id:str}")
async def get_customer(request: Request, customer_id: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="customers:read")
    return await one_response(request, CUSTOMERS, principal, parse_id(customer_id))


@put("/api/customers/{customer_id:str}")
async def update_customer(request: Request, customer_id: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="customers:write")
    body = await decode_body(request, customers.CustomerUpdate)
    created = await run_command(request, customers.update_customer, principal, parse_id(customer_id), body)
    return await one_response(request, CUSTOMERS, principal, created.id, created=created)


@get("/api/conversations")
async def list_conversations(request: Request) -> Response:
    return await listing_response(request, "conversations")


@post("/api/conversations", status_code=200)
async def create_conversation(request: Request) -> Response:
    principal = await authenticate(request, scope="messages:write")
    body = await decode_body(request, conversations.ConversationCreate)
    created = await run_command(request, conversations.create_conversation, principal, body)
    return await one_response(request, CONVERSATIONS, principal, created.id, created=created)


@get("/api/conversations/{conversation_id:str}")
async def get_conversation(request: Request, conversation_id: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="conversations:read")
    return await one_response(request, CONVERSATIONS, principal, parse_id(conversation_id))


@get("/api/messages")
async def list_messages(request: Request) -> Response:
    return await listing_response(request, "messages")


@post("/api/messages", status_code=200)
async def create_message(request: Request) -> Response:
    created = await with_principal(request, messages.create_message, messages.MessageCreate, scope="messages:write")
    # Answered from the event, not the read model: the hot write path does not wait for the projection;
    # the next read by anyone in the organization still waits for this position.
    return json_response(new_message(created.event), created)


@get("/api/messages/{message_id:str}")
async def get_message(request: Request, message_id: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="messages:read")
    return await one_response(request, MESSAGES, principal, parse_id(message_id))


@post("/api/messages/{message_id:str}/read", status_code=200)
async def read_message(request: Request, message_id: FromPath[str]) -> Response:
    principal = await authenticate(request, scope="messages:write")
    created = await run_command(request, messages.mark_read, principal, parse_id(message_id))
    return await one_response(request, MESSAGES, principal, created.id, created=created)


ROUTES = [
    list_websites, get_website, list_customers, create_customer, get_customer, update_customer,
    list_conversations, create_conversation, get_conversation, list_messages, create_message, get_message,
    read_message,
]
