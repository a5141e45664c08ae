"""What a visitor may see: their conversations and transcript, without internal notes, operator-only
conversations, staff ids or anything else about the team. One shape per resource, built from a
read-model row (REST) or from an event (the visitor's realtime channel)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Iterable

import msgspec
import psycopg

from events import types as ev
from projections.richtext import render_markdown
from projections.views.attachments import AttachmentView, attachment_views, stored_views
from projections.views.identities import OperatorIdentity, identity_of_row, profile_column


class VisibleReaction(msgspec.Struct, rename={"sender": "from"}):
    emoji: str
    sender: str  # "customer" (the visitor) or "operator" (the team)


class ChatConversation(msgspec.Struct, rename={"id": "_id", "website_id": "websiteId", "customer_id": "customerId",
                                               "created_at": "createdAt", "last_edit_time": "lastEditTime"}):
    id: uuid.UUID
    website_id: uuid.UUID
    customer_id: uuid.UUID
    created_at: datetime
    last_edit_time: datetime
    resolved: bool


class ChatMessage(msgspec.Struct, rename={"id": "_id", "conversation_id": "conversationId", "sender": "from",
                                          "reply_to": "replyToMessageId", "creation_time": "creationTime",
                                          "rating_time": "ratingTime", "read_at": "readAt",
                                          "content_html": "contentHtml", "edited_at": "editedAt"}):
    id: uuid.UUID
    conversation_id: uuid.UUID
    content: str
    sender: str
    reply_to: uuid.UUID | None
    creation_time: datetime
    rating: str | None
    rating_time: datetime | None
    author: str  # "customer", "operator" (the team) or "agent" (the website's AI agent)
    incomplete: bool  # the agent's answer was cut short: what it had streamed
    reactions: list[VisibleReaction]
    # the team member who wrote a reply, by display name and avatar (None for the visitor, the AI agent, a
    # campaign, an API key): never the e-mail address
    operator: OperatorIdentity | None
    attachments: list[AttachmentView]  # files, each with signed, expiring links to its bytes
    read_at: datetime | None = None  # when the team first read the visitor's message ("seen")
    edited_at: datetime | None = None  # when an operator last changed its text
    deleted: bool = False  # taken back: `content` is empty and no file shows for every reader (the history keeps them)
    # the sanitized rendering of `content` (projections.richtext), computed on read: never stored
    content_html: str = ""

    def __post_init__(self) -> None:
        self.content_html = render_markdown(self.content)
        if self.deleted:
            self.attachments = []


class Profile(msgspec.Struct, rename={"customer_id": "customerId", "user_id": "userId",
                                      "unverified_email": "unverifiedEmail"}):
    customer_id: uuid.UUID
    email: str | None  # the verified one: signed by the website's server
    nickname: str | None
    phone: str | None
    user_id: str | None
    unverified_email: str | None  # what the visitor typed (`PUT /api/chat/profile` {email}), never checked
    language: str | None  # the widget's language, which it stores here for the team


class VisitorReactions(msgspec.Struct, rename="camel"):
    message_id: uuid.UUID
    reactions: list[VisibleReaction]


def visible_reactions(stored: Iterable[dict[str, Any]]) -> list[VisibleReaction]:
    return [VisibleReaction(r["emoji"], r["from"]) for r in stored]


CONVERSATION_SELECT = "SELECT id, website_id, customer_id, created_at, last_edit_time, resolved FROM rm_conversations"
# Only the visitor's own, visible conversations: the filter every visitor read goes through.
VISITOR_CONVERSATIONS = "org_id = %s AND customer_id = %s AND NOT operator_only"
MESSAGE_SELECT = ("SELECT m.id, m.conversation_id, m.content, m.sender, m.reply_to, m.creation_time, m.rating, "
                  "m.rating_time, COALESCE(m.author, m.sender), m.incomplete, m.reactions, m.operator_id, "
                  f"{profile_column('m.operator_id')}, m.attachments, CASE WHEN m.sender = 'customer' THEN m.read_at END, "
                  "m.edited_at, m.deleted FROM rm_messages m")


def chat_message_of_row(row: tuple) -> ChatMessage:
    *fields, reactions, operator_id, profile, attachments, read_at, edited_at, deleted = row
    return ChatMessage(*fields, visible_reactions(reactions), identity_of_row(operator_id, profile),
                       stored_views(attachments), read_at, edited_at, deleted)


async def visitor_conversations(conn: psycopg.AsyncConnection, org_id: uuid.UUID, customer_id: uuid.UUID,
                                conversation_id: uuid.UUID | None = None) -> list[ChatConversation]:
    sql, args = f"{CONVERSATION_SELECT} WHERE {VISITOR_CONVERSATIONS}", [org_id, customer_id]
    if conversation_id is not None:
        sql, args = sql + " AND id = %s", [*args, conversation_id]
    rows = await (await conn.execute(sql + " ORDER BY last_edit_time DESC, id DESC", args)).fetchall()
    return [ChatConversation(*row) for row in rows]


async def current_conversation(conn: psycopg.AsyncConnection, org_id: uuid.UUID,
                               customer_id: uuid.UUID) -> uuid.UUID | None:
    """The conversation the widget shows: the visitor's latest open one (a resolved one is over)."""
    row = await (await conn.execute(
        f"SELECT id FROM rm_conversations WHERE {VISITOR_CONVERSATIONS} AND NOT resolved "
        "ORDER BY last_edit_time DESC, id DESC LIMIT 1", (org_id, customer_id))).fetchone()
    return row[0] if row else None


async def visitor_messages(conn: psycopg.AsyncConnection, org_id: uuid.UUID, customer_id: uuid.UUID,
                           conversation_id: uuid.UUID | None = None,
                           message_id: uuid.UUID | None = None) -> list[ChatMessage]:
    """The visitor's transcript (of one conversation, or one message of it): never an internal note."""
    sql = (f"{MESSAGE_SELECT} WHERE NOT m.internal AND m.org_id = %s AND m.conversation_id IN "
           f"(SELECT id FROM rm_conversations WHERE {VISITOR_CONVERSATIONS})")
    args: list[Any] = [org_id, org_id, customer_id]
    if conversation_id is not None:
        sql, args = sql + " AND m.conversation_id = %s", [*args, conversation_id]
    if message_id is not None:
        sql, args = sql + " AND m.id = %s", [*args, message_id]
    rows = await (await conn.execute(sql + " ORDER BY m.creation_time, m.id", args)).fetchall()
    return [chat_message_of_row(row) for row in rows]


def chat_conversation_of(e: ev.ConversationCreated) -> ChatConversation:
    return ChatConversation(e.conversation_id, e.website_id, e.customer_id, e.at, e.at, False)


def chat_message_of(e: ev.MessageCreated, operator: OperatorIdentity | None = None) -> ChatMessage:
    """The message as the visitor sees it when it is created, with its author as the caller looked it up."""
    return ChatMessage(e.message_id, e.conversation_id, e.content, e.sender, e.reply_to, e.at, None, None,
                       e.author or e.sender, e.incomplete, [], operator, attachment_views(e.attachments))


async def visitor_profile(conn: psycopg.AsyncConnection, org_id: uuid.UUID, customer_id: uuid.UUID) -> Profile:
    """The visitor's own customer record, as their profile shows it."""
    row = await (await conn.execute(
        "SELECT id, email, nickname, phone, user_id, unverified_email, language FROM rm_customers "
        "WHERE id = %s AND org_id = %s",
        (customer_id, org_id))).fetchone()
    return Profile(*row)
