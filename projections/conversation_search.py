"""The conversation search read model: the words of every message (internal notes included, marked) and of
every customer's name, e-mail address and phone number, for `GET /api/search`.

- `rm_search_messages`: one row per message with its full-text vector (`words`, the `simple` configuration:
  lower-cased words, no stemming, since a conversation may be in any language) behind a GIN index, a
  trigram index on the content (`pg_trgm`) for the fallback that finds e-mail addresses and parts of
  words, and the organization's messages newest first, which a word found in many messages pages by.
- `rm_search_customers`: the customer's name, e-mail address and phone number with their words and, lower-
  cased in one string (`haystack`), their trigrams.

The view is `projections/views/conversation_search.py`.
"""

from __future__ import annotations

from events import types as ev
from projections.handlers import Handler, ReadModel, as_json

TABLES = ("rm_search_messages", "rm_search_customers")

DDL = """
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE IF NOT EXISTS rm_search_messages (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, conversation_id uuid NOT NULL,
    internal boolean NOT NULL, creation_time timestamptz NOT NULL, content text NOT NULL,
    words tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, content)) STORED);
CREATE INDEX IF NOT EXISTS rm_search_messages_words ON rm_search_messages USING gin (words);
CREATE INDEX IF NOT EXISTS rm_search_messages_trigrams ON rm_search_messages USING gin (content gin_trgm_ops);
CREATE INDEX IF NOT EXISTS rm_search_messages_recent ON rm_search_messages (org_id, creation_time DESC, id DESC);
CREATE TABLE IF NOT EXISTS rm_search_customers (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL,
    nickname text, email text, phone text,
    words tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig,
        coalesce(nickname, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))) STORED,
    haystack text GENERATED ALWAYS AS (lower(
        coalesce(nickname, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))) STORED);
CREATE INDEX IF NOT EXISTS rm_search_customers_words ON rm_search_customers USING gin (words);
CREATE INDEX IF NOT EXISTS rm_search_customers_trigrams ON rm_search_customers USING gin (haystack gin_trgm_ops);
-- A query's words (as `to_tsvector('simple')` splits them), each as the start of a word, all of them
-- required. Immutable, so the planner computes it from the query's text and estimates how many rows match.
CREATE OR REPLACE FUNCTION rm_search_words(query text) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(lexeme) || ':*', ' & '), ''))
    FROM unnest(to_tsvector('simple', query))
$$;
"""

CUSTOMER_FIELDS = ("nickname", "email", "phone")


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    await conn.execute(
        "INSERT INTO rm_search_messages (id, org_id, website_id, conversation_id, internal, creation_time, content) "
        "SELECT message_id, org_id, website_id, conversation_id, internal, at, content "
        "FROM json_to_recordset(%s::json) AS m(message_id uuid, org_id uuid, website_id uuid, conversation_id uuid, "
        "internal boolean, at timestamptz, content text) ON CONFLICT DO NOTHING", (as_json(events),))


async def _customer(conn, e: ev.CustomerCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_search_customers (id, org_id, website_id, nickname, email, phone) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.customer_id, e.org_id, e.website_id, e.nickname, e.email, e.phone))


async def _customer_updated(conn, e: ev.CustomerUpdated) -> None:
    changes = {name: value for name, value in e.changes.items() if name in CUSTOMER_FIELDS}
    if changes:
        assignments = ", ".join(f"{name} = %s" for name in changes)
        await conn.execute(f"UPDATE rm_search_customers SET {assignments} WHERE id = %s",
                           (*changes.values(), e.customer_id))


HANDLERS: dict[type, Handler] = {
    ev.CustomerCreated: _customer,
    ev.CustomerUpdated: _customer_updated,
}


class ConversationSearchProjection(ReadModel):
    name, ddl, tables = "conversation_search", DDL, TABLES
    functions = ("rm_search_words(text)",)
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _messages}
    handles = (ev.MessageCreated, ev.CustomerCreated, ev.CustomerUpdated)
