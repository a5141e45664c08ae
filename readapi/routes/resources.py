"""Websites, customers, conversations and messages: reads query the read models, writes call commands."""

from __future__ import annotations

from functools import partial

from litestar import Request, Response, get, post, put
from litestar.params import FromPath

from commands import conversations, customers, messages
from commands.admin import Created
from commands.principal import Principal
from events.ids import parse_id
from readapi.auth import Auth, Authenticated, Decoded, author, with_principal
from projections.views.collections import (CONVERSATION_RECORD, CONVERSATIONS, CUSTOMERS, MESSAGES, WEBSITES, Collection,
                                 Conversation, ConversationRecord, Customer, Message, Website, new_message, read_one)
from projections.views.inbox import INBOX_QUERY, InboxPage, read_conversations
from projections.views.workflow import conversation_version
from readapi.openapi import ID, ListOf, collection_query, describe
from readapi.listing import Listing, collection_listing, listing_response, register
from readapi.time_travel import AS_OF, conversation_as_of, inbox_as_of, messages_as_of, parse_as_of
from readapi.services import caught_up, json_response, run_command, services, written

WEBSITES_LISTING = register(collection_listing("websites", "websites:read", WEBSITES))
CUSTOMERS_LISTING = register(collection_listing("customers", "customers:read", CUSTOMERS))
CONVERSATIONS_LISTING = register(Listing("conversations", "conversations:read", read_conversations,
                                         ("core", "inbox", "agent")))
MESSAGES_LISTING = register(collection_listing("messages", "messages:read", MESSAGES))


async def one_response(request: Request, collection: Collection, principal: Principal, record_id,
                       key_column: str = "id", created: Created | None = None) -> Response:
    svc = services(request)
    if created is None:
        await caught_up(request)
    else:
        await written(request, created)
    async with svc.pool.connection() as conn:
        return json_response(await read_one(conn, collection, principal, record_id, key_column), created)


@describe("List the websites", WEBSITES_LISTING.auth, answer=ListOf(Website), query=collection_query(WEBSITES),
          operation_id="listWebsites")
@get("/api/websites")
async def list_websites(request: Request, principal: Authenticated) -> Response:
    return await listing_response(request, principal, WEBSITES_LISTING)


@describe("Read a website by its name", Auth(scope="websites:read"), answer=Website, operation_id="getWebsite")
@get("/api/websites/{website_name:str}")
async def get_website(request: Request, principal: Authenticated, website_name: FromPath[str]) -> Response:
    return await one_response(request, WEBSITES, principal, website_name, key_column="name")


@describe("List the customers", CUSTOMERS_LISTING.auth, answer=ListOf(Customer), query=collection_query(CUSTOMERS),
          operation_id="listCustomers")
@get("/api/customers")
async def list_customers(request: Request, principal: Authenticated) -> Response:
    return await listing_response(request, principal, CUSTOMERS_LISTING)


@describe("Create a customer", Auth(scope="customers:write"), body=customers.CustomerCreate, answer=Customer, errors=(404,),
          links={"getCustomer": {"customerId": ID}, "updateCustomer": {"customerId": ID}},
          example={"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10", "email": "ada@example.com",
                   "nickname": "Ada"}, operation_id="createCustomer")
@post("/api/customers", status_code=200)
async def create_customer(request: Request, principal: Authenticated,
                          payload: Decoded[customers.CustomerCreate]) -> Response:
    created = await run_command(request, customers.create_customer, principal, payload)
    return await one_response(request, CUSTOMERS, principal, created.id, created=created)


@describe("Read a customer", Auth(scope="customers:read"), answer=Customer, operation_id="getCustomer")
@get("/api/customers/{customer_id:str}")
async def get_customer(request: Request, principal: Authenticated, customer_id: FromPath[str]) -> Response:
    return await one_response(request, CUSTOMERS, principal, parse_id(customer_id))


@describe("Change a customer's details (only the fields given)", Auth(scope="customers:write"),
          body=customers.CustomerUpdate, answer=Customer, example={"nickname": "Ada L."}, operation_id="updateCustomer")
@put("/api/customers/{customer_id:str}")
async def update_customer(request: Request, principal: Authenticated, payload: Decoded[customers.CustomerUpdate],
                          customer_id: FromPath[str]) -> Response:
    created = await run_command(request, customers.update_customer, principal, parse_id(customer_id), payload)
    return await one_response(request, CUSTOMERS, principal, created.id, created=created)


@describe("List the conversations, or an operator's inbox page with `inboxFilter`", CONVERSATIONS_LISTING.auth,
          answer=(ListOf(Conversation), InboxPage), query=collection_query(CONVERSATIONS, *INBOX_QUERY, AS_OF),
          errors=(404,), operation_id="listConversations")
@get("/api/conversations")
async def list_conversations(request: Request, principal: Authenticated) -> Response:
    if as_of := parse_as_of(request.query_params):
        return json_response(await inbox_as_of(services(request), principal, request.query_params, as_of))
    return await listing_response(request, principal, CONVERSATIONS_LISTING)


@describe("Start a conversation", Auth(scope="messages:write"), body=conversations.ConversationCreate,
          links={"getConversation": {"conversationId": ID}, "updateConversation": {"conversationId": ID},
                 "createMessage": {"requestBody": {"conversationId": ID, "content": "Hello", "from": "customer"}}},
          answer=ConversationRecord, errors=(404,),
          example={"websiteId": "7d1c0a52-3f0e-4a57-9a39-4d2b1f6c9e10",
                   "customerId": "0b6f7d8e-2c4a-4f1e-8d3b-5a9c1e2f4d60"}, operation_id="createConversation")
@post("/api/conversations", status_code=200)
async def create_conversation(request: Request, principal: Authenticated,
                              payload: Decoded[conversations.ConversationCreate]) -> Response:
    created = await run_command(request, conversations.create_conversation, principal, payload)
    return await one_response(request, CONVERSATION_RECORD, principal, created.id, created=created)


async def conversation_response(request: Request, principal: Principal, conversation_id,
                                created: Created | None = None) -> Response:
    """The conversation, with its version as the `ETag` (what `If-Match` on `PATCH` names)."""
    if created is None:
        await caught_up(request)
    else:
        await written(request, created)
    async with services(request).pool.connection() as conn:
        # the version first: a record read after it is as new or newer, so an If-Match with it never
        # passes over a change the client was not shown
        version = await conversation_version(conn, principal, conversation_id)
        record = await read_one(conn, CONVERSATION_RECORD, principal, conversation_id)
    response = json_response(record, created)
    response.headers["ETag"] = f'"{version}"'
    return response


@describe("Read a conversation, with the metadata the visitor's page set on it, and its version as the `ETag`",
          Auth(scope="conversations:read"), answer=ConversationRecord, query=(AS_OF,), headers=("ETag",),
          operation_id="getConversation")
@get("/api/conversations/{conversation_id:str}")
async def get_conversation(request: Request, principal: Authenticated, conversation_id: FromPath[str]) -> Response:
    if as_of := parse_as_of(request.query_params):
        return json_response(await conversation_as_of(services(request), principal, parse_id(conversation_id), as_of))
    return await conversation_response(request, principal, parse_id(conversation_id))


@describe("List the messages", MESSAGES_LISTING.auth, answer=ListOf(Message), query=collection_query(MESSAGES, AS_OF),
          operation_id="listMessages")
@get("/api/messages")
async def list_messages(request: Request, principal: Authenticated) -> Response:
    if as_of := parse_as_of(request.query_params):
        return json_response(await messages_as_of(services(request), principal, request.query_params, as_of))
    return await listing_response(request, principal, MESSAGES_LISTING)


@describe("Post a message", Auth(scope="messages:write", kept=True), body=messages.MessageCreate, answer=Message,
          links={"getMessage": {"messageId": ID}, "markMessageRead": {"messageId": ID},
                 "rateMessageAsOperator": {"messageId": ID}, "reactToMessageAsOperator": {"messageId": ID}},
          errors=(404,), example={"conversationId": "3e8a1f20-6b7c-4d5e-9f01-2a3b4c5d6e7f",
                                  "content": "Hello! How can we help?", "from": "operator"},
          operation_id="createMessage")
@post("/api/messages", status_code=200)
async def create_message(request: Request) -> Response:
    created = await with_principal(request, partial(
        messages.create_message, attachments_max_bytes=services(request).attachments.attachment_message_max_bytes))
    # Answered from the event, not the read model: the hot write path does not wait for the projection;
    # the next read by anyone in the organization still waits for this position. Its author is named as the
    # credential's lookup found them: the append was refused had their name or avatar changed since.
    return json_response(new_message(created.event, author(request)), created)


@describe("Read a message", Auth(scope="messages:read"), answer=Message, operation_id="getMessage")
@get("/api/messages/{message_id:str}")
async def get_message(request: Request, principal: Authenticated, message_id: FromPath[str]) -> Response:
    return await one_response(request, MESSAGES, principal, parse_id(message_id))


@describe("Mark a message read", Auth(scope="messages:write"), answer=Message, operation_id="markMessageRead")
@post("/api/messages/{message_id:str}/read", status_code=200)
async def read_message(request: Request, principal: Authenticated, message_id: FromPath[str]) -> Response:
    created = await run_command(request, messages.mark_read, principal, parse_id(message_id))
    return await one_response(request, MESSAGES, principal, created.id, created=created)


ROUTES = [
    list_websites, get_website, list_customers, create_customer, get_customer, update_customer,
    list_conversations, create_conversation, get_conversation, list_messages, create_message, get_message,
    read_message,
]
