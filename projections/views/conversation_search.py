"""`GET /api/search`: the messages, internal notes (operators only) and customers (name, e-mail address,
phone number) of the organization that match a query, newest first, a page at a time.

Matching. The query's words must all start words of the text (`refu` finds "refund"): PostgreSQL full-text
search on `rm_search_messages.words`. A query that finds no message so, like a part of an e-mail address
or the middle of a word, is looked for as a substring instead (trigrams; three characters at least): the
page's cursor keeps which of the two the walk uses, so every page of it matches alike. Customers match by
words or substring at once (their table is small); a customer who matches brings each of their
conversations, as an item with no `messageId`, dated by the conversation's last change.

Order and pages: newest first by (time, id), a keyset; the cursor is that position, signed with the query
it belongs to (organization, credential kind, filters), as the other cursors are (views/cursors.py).
`snippet` is the text around the first match, HTML-escaped, the matches in `<mark>`.
"""

from __future__ import annotations

import hashlib
import html
import re
import struct
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

import msgspec
import psycopg

from commands.errors import Forbidden, Invalid
from commands.principal import Principal
from projections.views.collections import parse_bool, parse_int
from projections.views.cursors import cursor_key, open_position, seal_position
from projections.views.history_query import parse_id_param, parse_time
from projections.views.parameters import Time, query

DEFAULT_PAGE = 20
MAX_PAGE = 100  # a larger `limit` is capped to this
MAX_QUERY = 200  # characters of `q`
MIN_SUBSTRING = 3  # a trigram index finds nothing shorter
SNIPPET = 160  # characters of text around the first match
BEFORE_MATCH = 50  # of which at most this many before it
WORDS, SUBSTRING = b"w", b"s"  # how the walk matches messages, kept in its cursor
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_POSITION = struct.Struct(">q16sc")  # microseconds since the epoch, the item's key, the matching

SEARCH_QUERY = (
    query("q", str, "The words to find (all of them, each as the start of a word), or a part of an e-mail "
                     "address, phone number or word.", required=True),
    query("websiteId", str, "Only this website's conversations."),
    query("resolved", bool, "Only resolved (true) or unresolved (false) conversations."),
    query("assigneeId", str, "Only the conversations assigned to this operator."),
    query("labels", str, "Only the conversations with every one of these labels (names, comma-separated)."),
    query("since", Time, "Only what was written at or after this time."),
    query("until", Time, "Only what was written before this time."),
    query("limit", int, f"Items per page: {DEFAULT_PAGE} by default, at most {MAX_PAGE}."),
    query("cursor", str, "The previous page's `nextCursor`."),
)


class SearchCustomer(msgspec.Struct):
    _id: uuid.UUID
    nickname: str | None
    email: str | None


class SearchHit(msgspec.Struct, rename="camel"):
    conversation_id: uuid.UUID
    message_id: uuid.UUID | None  # None: the customer matched, not a message
    snippet: str
    creation_time: datetime
    customer: SearchCustomer


class SearchPage(msgspec.Struct, rename="camel"):
    items: list[SearchHit]
    next_cursor: str | None


@dataclass(frozen=True)
class Terms:
    """What a query looks for: its words (the full-text query is made of them in SQL) and the substring."""

    text: str
    words: tuple[str, ...]

    @property
    def substring_pattern(self) -> str | None:
        if len(self.text) < MIN_SUBSTRING:
            return None
        return "%" + re.sub(r"([\\%_])", r"\\\1", self.text) + "%"


def parse_terms(params: Mapping[str, str]) -> Terms:
    text = " ".join((params.get("q") or "").split())
    if not text:
        raise Invalid("q is required: the words to search for", "q")
    if len(text) > MAX_QUERY:
        raise Invalid(f"q is longer than {MAX_QUERY} characters", "q")
    return Terms(text, tuple(dict.fromkeys(word.lower() for word in re.findall(r"\w+", text))))


TS_QUERY = "rm_search_words(%(q)s)"  # every word of the query, each as the start of a word


def highlight(text: str, terms: Terms) -> str:
    """The part of `text` around its first match, HTML-escaped, each match (a word starting with a query
    word, or the query itself) in `<mark>`."""
    words = [rf"\b{re.escape(word)}\w*" for word in terms.words]
    # a query of one word marks the words it starts (else where it occurs inside one); any other, its whole
    # text first where it occurs
    substring = re.escape(terms.text)
    alternatives = [*words, substring] if terms.words == (terms.text.lower(),) else [substring, *words]
    pattern = re.compile("|".join(alternatives), re.IGNORECASE)
    first = pattern.search(text)
    start = max(0, first.start() - BEFORE_MATCH) if first else 0
    if start:  # begin at a word
        start = next((i + 1 for i in range(start, first.start()) if text[i].isspace()), start)
    end = min(len(text), start + SNIPPET)
    window = text[start:end]
    out, at = [], 0
    for match in pattern.finditer(window):
        if match.end() == match.start():
            continue
        out += [html.escape(window[at:match.start()]), "<mark>", html.escape(match.group()), "</mark>"]
        at = match.end()
    out.append(html.escape(window[at:]))
    return ("…" if start else "") + "".join(out).replace("\n", " ") + ("…" if end < len(text) else "")


def micros(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


@dataclass(frozen=True)
class Search:
    """A request's query and filters (what its cursors are bound to), checked before anything is read."""

    org_id: uuid.UUID
    terms: Terms
    notes: bool  # internal notes are an operator's to find
    website_id: uuid.UUID | None
    resolved: bool | None
    assignee_id: uuid.UUID | None
    label_names: tuple[str, ...]  # lower-cased
    since: datetime | None
    until: datetime | None
    limit: int

    def fingerprint(self) -> bytes:
        """The query a cursor belongs to; its page size may change from page to page."""
        return hashlib.sha256(repr(replace(self, limit=0)).encode()).digest()[:16]

    def conversation_filters(self, alias: str) -> str:
        """The filters on the conversation (`alias` of rm_conversations); the labels named must all exist."""
        where = [f"{alias}.org_id = %(org)s"]
        if self.website_id is not None:
            where.append(f"{alias}.website_id = %(website)s")
        if self.resolved is not None:
            where.append(f"{alias}.resolved = %(resolved)s")
        if self.assignee_id is not None:
            where.append(f"{alias}.assignee_id = %(assignee)s")
        if self.label_names:
            where.append(f"{alias}.labels @> ARRAY({NAMED_LABELS.format('id')}) "
                         f"AND ({NAMED_LABELS.format('count(*)')}) = %(label_count)s")
        return " AND ".join(where)


# the organization's labels the search names, case aside
NAMED_LABELS = "SELECT {} FROM rm_labels WHERE org_id = %(org)s AND lower(name) = ANY(%(label_names)s)"


def parse_search(principal: Principal, params: Mapping[str, str]) -> Search:
    if principal.kind == "apikey" and "messages:read" not in principal.scopes:
        raise Forbidden("the API key lacks the messages:read scope")
    website_id = parse_id_param(params, "websiteId")
    if principal.website_id is not None:
        if website_id not in (None, principal.website_id):
            raise Forbidden("this API key is pinned to another website")
        website_id = principal.website_id
    label_names = tuple(sorted({name.strip().lower() for name in (params.get("labels") or "").split(",")
                                if name.strip()}))
    return Search(principal.org_id, parse_terms(params), principal.is_operator, website_id,
                  parse_bool(params, "resolved"), parse_id_param(params, "assigneeId"), label_names,
                  parse_time(params, "since"), parse_time(params, "until"),
                  min(parse_int(params, "limit") or DEFAULT_PAGE, MAX_PAGE))


def time_window(column: str, search: Search) -> str:
    return "".join([f" AND {column} >= %(since)s" if search.since else "",
                    f" AND {column} < %(until)s" if search.until else ""])


def message_hits_sql(search: Search, matching: bytes, after: bool) -> str:
    conversation = search.conversation_filters("c")
    match = f"m.words @@ {TS_QUERY}" if matching == WORDS else "m.content ILIKE %(pattern)s"
    return (
        "SELECT m.creation_time AS at, m.id AS key, m.id AS message_id, m.conversation_id, m.content AS text, "
        "c.customer_id FROM rm_search_messages m JOIN rm_conversations c ON c.id = m.conversation_id "
        f"WHERE m.org_id = %(org)s AND {match} AND {conversation}"
        + ("" if search.notes else " AND NOT m.internal")
        + (" AND m.website_id = %(website)s" if search.website_id else "")
        + time_window("m.creation_time", search)
        + (" AND (m.creation_time, m.id) < (%(after_time)s, %(after_key)s)" if after else "")
        + " ORDER BY m.creation_time DESC, m.id DESC LIMIT %(rows)s")


def customer_hits_sql(search: Search, after: bool) -> str:
    conversation = search.conversation_filters("c")
    substring = " OR s.haystack LIKE lower(%(pattern)s)" if search.terms.substring_pattern else ""
    return (
        "SELECT c.last_edit_time AS at, c.id AS key, NULL::uuid AS message_id, c.id AS conversation_id, "
        "concat_ws(' · ', s.nickname, s.email, s.phone) AS text, s.id AS customer_id "
        "FROM rm_search_customers s JOIN rm_conversations c ON c.org_id = s.org_id AND c.customer_id = s.id "
        f"WHERE s.org_id = %(org)s AND (s.words @@ {TS_QUERY}{substring}) AND {conversation}"
        + time_window("c.last_edit_time", search)
        + (" AND (c.last_edit_time, c.id) < (%(after_time)s, %(after_key)s)" if after else "")
        + " ORDER BY c.last_edit_time DESC, c.id DESC LIMIT %(rows)s")


def page_sql(search: Search, matching: bytes, after: bool) -> str:
    """One statement: the newest matching messages and customers' conversations, each planned on its own,
    merged into the page (and the one after its last item), with the customers' names; the last column
    counts the messages found, which decides the fallback."""
    return (
        f"WITH messages AS MATERIALIZED ({message_hits_sql(search, matching, after)}), "
        f"customers AS MATERIALIZED ({customer_hits_sql(search, after)}), "
        "page AS (SELECT * FROM messages UNION ALL SELECT * FROM customers ORDER BY at DESC, key DESC "
        "LIMIT %(rows)s) "
        "SELECT page.at, page.key, page.message_id, page.conversation_id, page.text, page.customer_id, "
        "who.nickname, who.email, (SELECT count(*) FROM messages) "
        "FROM page LEFT JOIN rm_customers who ON who.id = page.customer_id ORDER BY page.at DESC, page.key DESC")


async def search_conversations(conn: psycopg.AsyncConnection, principal: Principal,
                               params: Mapping[str, str]) -> SearchPage:
    """A page of the search; one statement (two when the query's words find no message and it is looked for
    as a substring instead). Its statements are never prepared: a generic plan cannot tell a rare word (the
    words' index) from a common one (the newest messages, until a page is full)."""
    search = parse_search(principal, params)
    key = await cursor_key(conn)
    args: dict[str, Any] = {"org": search.org_id, "website": search.website_id, "resolved": search.resolved,
                            "assignee": search.assignee_id, "label_names": list(search.label_names),
                            "label_count": len(search.label_names), "q": search.terms.text,
                            "pattern": search.terms.substring_pattern, "since": search.since,
                            "until": search.until, "rows": search.limit + 1}
    matching, after = WORDS, bool(params.get("cursor"))
    if after:
        at, after_key, matching = _POSITION.unpack(
            open_position(key, params["cursor"], search.fingerprint(), _POSITION.size))
        args.update(after_time=from_micros(at), after_key=uuid.UUID(bytes=after_key))
    rows = await (await conn.execute(page_sql(search, matching, after), args, prepare=False)).fetchall()
    if not after and search.terms.substring_pattern and not (rows and rows[0][-1]):
        matching = SUBSTRING
        rows = await (await conn.execute(page_sql(search, matching, after), args, prepare=False)).fetchall()
    page = rows[:search.limit]
    items = [SearchHit(conversation_id=conversation_id, message_id=message_id, snippet=highlight(text, search.terms),
                       creation_time=at, customer=SearchCustomer(customer_id, nickname, email))
             for at, _, message_id, conversation_id, text, customer_id, nickname, email, _ in page]
    next_cursor = None
    if len(rows) > search.limit:
        last_time, last_key = page[-1][:2]
        next_cursor = seal_position(key, _POSITION.pack(micros(last_time), last_key.bytes, matching),
                                    search.fingerprint())
    return SearchPage(items, next_cursor)
