"""The MCP server's tools and views (`build_server`), for the connection's operator in the connection's one
organization. Every result is built into an allow-listed shape (`shapes.py`); a refusal of a command
(not found, invalid) becomes a tool error saying what went wrong, and the SDK masks anything unexpected.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import hashlib
import hmac
import json
import time
import uuid
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, AsyncIterator, Literal
from zoneinfo import ZoneInfo

from mcp.server.apps import Apps
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
import msgspec
from pydantic import Field

from commands import conversations as conversation_commands
from commands.errors import CommandError, NotFound
from commands.messages import MAX_CONTENT, MessageCreate, conversation_created_async, create_message
from commands.campaigns import STATUSES
from commands.principal import ALL_SCOPES, Principal
from events import origin
from mcp_server.shapes import (ActivityView, Audience, Campaign, CampaignInspection, CampaignList, CampaignStats,
                               ConversationItem, ConversationPage, ConversationStates, DayActivity, HelpDocument,
                               HelpDocumentMatch, HelpDocumentMatches, InboxRow, InboxView, Overview, OverviewTile,
                               ReplySent, ResolvedState, UnresolvedCount, Website, WebsiteList, WebsiteSummary,
                               WorkloadSummary)
from mcp_server.views import ACTIVITY_HTML, ACTIVITY_URI, INBOX_HTML, INBOX_URI, OVERVIEW_HTML, OVERVIEW_URI
from events.ids import parse_id
from projections.views.document_search import search_documents
from projections.views import campaigns, summaries
from projections.views.activity import DAYS, DayCounts, activity_by_day, conversation_activity, oldest_waiting
from projections.views.cursors import cursor_key
from projections.views.documents import published_document
from projections.views.inbox import CONVERSATION_FILTERS, INBOX_FILTERS, MAX_PAGE, Walk, read_inbox, scope_of, walk_tab
from projections.views.websites import websites_by_name

UTC = ZoneInfo("UTC")

WRITE_TOOLS = frozenset({"send_operator_reply", "set_conversation_resolved"})
READ_MODELS = ("core", "inbox", "activity", "documents", "campaigns", "chat")
LIST_PAGE = 20
INBOX_VIEW_ROWS = 50
DUPLICATE_WAIT_SECONDS = 10.0
WALKS_AT_ONCE = 4  # websites whose listings one count walks at the same time, each on a connection of its own

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

REPLIES_DDL = """
CREATE TABLE IF NOT EXISTS parley_mcp_replies (
    org_id uuid NOT NULL, operator_id uuid NOT NULL, request_id text NOT NULL, conversation_id uuid NOT NULL,
    sent_at timestamptz, PRIMARY KEY (org_id, operator_id, request_id));
"""

WebsiteId = Annotated[str, Field(description="the website's id (from list_websites)")]
ConversationId = Annotated[str, Field(description="the conversation's id (from list_conversations)")]


def principal() -> tuple[Principal, int]:
    """The connection's operator in its organization, and the organization's latest write position."""
    access = get_access_token()
    if access is None:  # the gate lets no request through without one
        raise ToolError("not authenticated")
    who = Principal("operator", uuid.UUID(access.org_id), uuid.UUID(access.grant_id), ALL_SCOPES,
                    operator_id=uuid.UUID(access.subject), role=access.role)
    origin.acting(who.origin(None, via="mcp"))  # the client's address is not known here
    return who, access.position


def refusals(tool):
    """A command's refusal (not found, invalid) is the tool's error, in the command's own words."""
    @functools.wraps(tool)
    async def run(*args, **kwargs):
        try:
            return await tool(*args, **kwargs)
        except CommandError as exc:
            raise ToolError(exc.detail) from None
    return run


def _id(value: str, what: str) -> uuid.UUID:
    parsed = parse_id(value)
    if parsed is None:
        raise NotFound(f"{what} not found")
    return parsed


def _time(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def _states(counts: summaries.ConversationCounts) -> ConversationStates:
    return ConversationStates(open=counts.open, resolved=counts.resolved, spam=counts.spam, total=counts.total)


def _workload(figures: summaries.Workload) -> dict:
    """The fields every summary shares, as the summaries' shapes take them."""
    return msgspec.structs.asdict(figures) | {"conversations": _states(figures.conversations)}


def _days(days: list[DayCounts]) -> list[DayActivity]:
    return [DayActivity(day=d.day.isoformat(), conversations=d.conversations, visitor_messages=d.visitor_messages,
                        replies=d.replies) for d in days]


def _with_text(model, text: str) -> CallToolResult:
    """A view's result: the structured content its view renders, and a line of text for hosts without views."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json", by_alias=True))


class Reads:
    """What the read tools share: a read-model connection once the read models hold the organization's
    latest write (read-your-writes, as the REST reads do)."""

    def __init__(self, services):
        self.services = services

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[tuple]:
        who, position = principal()
        await self.services.watch.wait_for(position, READ_MODELS)
        async with self.services.pool.connection() as conn:
            yield conn, who

    async def website(self, conn, who: Principal, website_id: str) -> tuple[uuid.UUID, str]:
        found = await websites_by_name(conn, who.org_id, _id(website_id, "website"))
        if not found:
            raise NotFound("website not found")
        return found[0]

    async def walk_unresolved(self, website_ids: list[uuid.UUID], conversation_filter: str) -> list[Walk]:
        """Each website's unresolved listing walked to its end; several at once, since each walk is one
        statement that shares nothing with the others (the caller has waited for the read models)."""
        at_once = asyncio.Semaphore(WALKS_AT_ONCE)

        async def walk(website_id: uuid.UUID) -> Walk:
            async with at_once, self.services.pool.connection() as conn:
                return await walk_tab(conn, await scope_of(conn, website_id, conversation_filter, UTC), "unresolved")
        return await asyncio.gather(*(walk(website_id) for website_id in website_ids))



def _cursor_mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()[:16]


def seal_cursor(key: bytes, offset: int, fingerprint: str) -> str:
    payload = json.dumps([offset, fingerprint]).encode()
    return base64.urlsafe_b64encode(payload + _cursor_mac(key, payload)).decode().rstrip("=")


def open_cursor(key: bytes, cursor: str, fingerprint: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload, mac = raw[:-16], raw[-16:]
        offset, issued_for = json.loads(payload)
    except (binascii.Error, ValueError, TypeError):
        raise ToolError("the cursor is not valid; start again without one") from None
    if not hmac.compare_digest(mac, _cursor_mac(key, payload)) or issued_for != fingerprint or not isinstance(offset, int):
        raise ToolError("the cursor belongs to another listing; pass the same websiteId and inboxFilter")
    return offset


def build_server(services) -> MCPServer:
    reads = Reads(services)
    apps = Apps()
    # -- views (the Apps extension takes its tools before the server is made) ------------------------

    apps.add_html_resource(OVERVIEW_URI, OVERVIEW_HTML, name="overview", title="Parley overview")
    apps.add_html_resource(INBOX_URI, INBOX_HTML, name="inbox", title="Parley inbox")
    apps.add_html_resource(ACTIVITY_URI, ACTIVITY_HTML, name="activity", title="Parley conversation activity")

    @apps.tool(resource_uri=OVERVIEW_URI, name="show_overview", title="Show the overview", annotations=READ,
               description="An interactive overview: one tile per website with open, unread, resolved and spam "
                           "conversations and the longest current wait.")
    @refusals
    async def show_overview() -> Annotated[CallToolResult, Overview]:
        async with reads.connection() as (conn, who):
            found = await websites_by_name(conn, who.org_id)
            ids = [w for w, _ in found]
            per_website, waits = await summaries.states(conn, ids), await oldest_waiting(conn, ids)
        tiles = [OverviewTile(website_id=str(w), name=name, open=per_website[w][0].open, unread=per_website[w][1],
                              resolved=per_website[w][0].resolved, spam=per_website[w][0].spam,
                              oldest_waiting_seconds=waits.get(w)) for w, name in found]
        text = "; ".join(f"{t.name}: {t.open} open, {t.unread} unread" for t in tiles) or "No websites."
        return _with_text(Overview(websites=tiles), text)

    @apps.tool(resource_uri=INBOX_URI, name="show_inbox", title="Show the inbox", annotations=READ,
               description="An interactive inbox of one website: its 50 most recently active conversations as "
                           "rows of status, unread, awaiting reply and last activity time.")
    @refusals
    async def show_inbox(websiteId: WebsiteId) -> Annotated[CallToolResult, InboxView]:
        async with reads.connection() as (conn, who):
            website_id, name = await reads.website(conn, who, websiteId)
            page = await read_inbox(conn, who, {"websiteId": str(website_id), "inboxFilter": "all",
                                                "limit": str(min(INBOX_VIEW_ROWS, MAX_PAGE))})
            activity = await conversation_activity(conn, [c.id for c in page.conversations])
        rows = [InboxRow(status="spam" if c.spam else "resolved" if c.resolved else "open", unread=c.unread,
                         awaiting_reply=activity.get(c.id, (0, False))[1], last_edit_time=_time(c.last_edit_time))
                for c in page.conversations]
        open_rows = sum(row.status == "open" for row in rows)
        return _with_text(InboxView(website_id=str(website_id), name=name, rows=rows),
                          f"{name}: {len(rows)} recent conversations, {open_rows} open, "
                          f"{sum(row.unread for row in rows)} unread")

    @apps.tool(resource_uri=ACTIVITY_URI, name="show_conversation_activity", title="Show conversation activity",
               annotations=READ,
               description="An interactive chart of one website's activity per UTC day: conversations started, "
                           "visitor messages and replies, over the last `days` days (default 7, at most 90).")
    @refusals
    async def show_conversation_activity(
            websiteId: WebsiteId,
            days: Annotated[int, Field(description="how many days, 1 to 90", ge=1, le=90)] = DAYS,
    ) -> Annotated[CallToolResult, ActivityView]:
        async with reads.connection() as (conn, who):
            website_id, name = await reads.website(conn, who, websiteId)
            per_day = _days(await activity_by_day(conn, [website_id], days))
        text = f"{name}, last {days} days: " + ", ".join(
            f"{d.day} {d.conversations} started/{d.visitor_messages} in/{d.replies} replies" for d in per_day)
        return _with_text(ActivityView(website_id=str(website_id), name=name, days=per_day), text)

    mcp = MCPServer(
        "parley", title="Parley", version="1",
        instructions="Parley's customer-support workspace for one organization: summaries, conversation states, "
                     "help documents; replies and resolving need the parley:write scope. Results never carry "
                     "customer identities, message contents or internal notes.",
        extensions=[apps])

    # -- websites and workload -----------------------------------------------------------------------

    @mcp.tool(name="list_websites", title="List websites", annotations=READ,
              description="The organization's websites: id, vanity name, conversations by state (open, resolved, "
                          "spam, total) and unread conversations.")
    @refusals
    async def list_websites() -> WebsiteList:
        async with reads.connection() as (conn, who):
            found = await websites_by_name(conn, who.org_id)
            per_website = await summaries.states(conn, [w for w, _ in found])
        return WebsiteList(websites=[Website(id=str(w), name=name, conversations=_states(per_website[w][0]),
                                             unread=per_website[w][1]) for w, name in found])

    @mcp.tool(name="get_website_summary", title="Website summary", annotations=READ,
              description="One website's workload: conversations by state, unread, the operator's mentions, the "
                          "longest current wait for a reply, the median first-response time this week and the "
                          "number of published help documents.")
    @refusals
    async def get_website_summary(websiteId: WebsiteId) -> WebsiteSummary:
        async with reads.connection() as (conn, who):
            website_id, name = await reads.website(conn, who, websiteId)
            shared = _workload(await summaries.workload(conn, who.org_id, who.operator_id, [website_id]))
        return WebsiteSummary(website_id=str(website_id), name=name, **shared)

    @mcp.tool(name="get_workload_summary", title="Workload summary", annotations=READ,
              description="The same figures as get_website_summary across all the organization's websites, and "
                          "per UTC day for the last 7 days: conversations started, visitor messages, replies.")
    @refusals
    async def get_workload_summary() -> WorkloadSummary:
        async with reads.connection() as (conn, who):
            website_ids = [w for w, _ in await websites_by_name(conn, who.org_id)]
            shared = _workload(await summaries.workload(conn, who.org_id, who.operator_id, website_ids))
            per_day = _days(await activity_by_day(conn, website_ids))
        return WorkloadSummary(websites=len(website_ids), days=per_day, **shared)

    # -- conversations -------------------------------------------------------------------------------

    @mcp.tool(name="count_unresolved_conversations", title="Count unresolved conversations", annotations=READ,
              description="The exact number of unresolved conversations (spam left out) of one website or of all, "
                          "optionally within a conversationFilter window, found by walking the paginated unresolved "
                          f"listing ({MAX_PAGE} conversations a page) to its end, not by reading one page; and how "
                          "many pages were walked.")
    @refusals
    async def count_unresolved_conversations(
            websiteId: Annotated[str | None, Field(description="one website's id; omit for all websites")] = None,
            conversationFilter: Annotated[Literal[CONVERSATION_FILTERS], Field(  # type: ignore[valid-type]
                description="all, last-hour, today (UTC), last-week or online")] = "all") -> UnresolvedCount:
        async with reads.connection() as (conn, who):
            if websiteId is None:
                website_ids = [w for w, _ in await websites_by_name(conn, who.org_id)]
            else:
                website_ids = [(await reads.website(conn, who, websiteId))[0]]
        walks = await reads.walk_unresolved(website_ids, conversationFilter)
        return UnresolvedCount(count=sum(w.conversations for w in walks), pages_walked=sum(w.pages for w in walks),
                               page_size=MAX_PAGE, websites=len(website_ids))

    @mcp.tool(name="list_conversations", title="List conversations", annotations=READ,
              description="One page (20) of a website's conversations in an inbox tab, most recently active first: "
                          "each conversation's id, resolved, spam, unread, lastEditTime, messageCount and "
                          "awaitingReply, nothing else; nextCursor gives the next page.")
    @refusals
    async def list_conversations(
            websiteId: WebsiteId,
            inboxFilter: Annotated[Literal[INBOX_FILTERS], Field(  # type: ignore[valid-type]
                description="all, unread, unresolved, resolved, mentions or spam")] = "all",
            cursor: Annotated[str | None, Field(description="nextCursor of the previous page")] = None,
    ) -> ConversationPage:
        async with reads.connection() as (conn, who):
            website_id, _ = await reads.website(conn, who, websiteId)
            key = await cursor_key(conn)
            fingerprint = f"{who.org_id}:{website_id}:{inboxFilter}"
            offset = open_cursor(key, cursor, fingerprint) if cursor else 0
            page = await read_inbox(conn, who, {"websiteId": str(website_id), "inboxFilter": inboxFilter,
                                                "limit": str(LIST_PAGE), "skip": str(offset)})
            found = page.conversations
            activity = await conversation_activity(conn, [c.id for c in found])
        items = [ConversationItem(id=str(c.id), resolved=c.resolved, spam=c.spam, unread=c.unread,
                                  last_edit_time=_time(c.last_edit_time),
                                  message_count=activity.get(c.id, (0, False))[0],
                                  awaiting_reply=activity.get(c.id, (0, False))[1]) for c in found]
        more = offset + len(found) < page.filtered_total
        return ConversationPage(conversations=items,
                                next_cursor=seal_cursor(key, offset + len(found), fingerprint) if more else None)

    # -- help documents ------------------------------------------------------------------------------

    @mcp.tool(name="search_help_documents", title="Search help documents", annotations=READ,
              description="Published help documents matching a question, best first, as the REST search gives "
                          "them: _id, websiteId, title, locale, category, score and a snippet.")
    @refusals
    async def search_help_documents(
            query: Annotated[str, Field(description="words or a question", min_length=1, max_length=1000)],
            websiteId: Annotated[str | None, Field(description="one website's id; omit for all")] = None,
            locale: Annotated[str, Field(description="language tag, such as en or pt-BR")] = "en",
    ) -> HelpDocumentMatches:
        params = {"query": query, "locale": locale} | ({"websiteId": websiteId} if websiteId else {})
        async with reads.connection() as (conn, who):
            matches = await search_documents(conn, services.settings.search, who, params)
        return HelpDocumentMatches(documents=[HelpDocumentMatch(
            id=str(m.id), website_id=str(m.website_id), title=m.title, locale=m.locale, category=m.category,
            score=m.score, snippet=m.snippet) for m in matches])

    @mcp.tool(name="get_help_document", title="Get a help document", annotations=READ,
              description="One published help document as the REST API gives it: _id, websiteId, title, locale, "
                          "category, published, content (Markdown), createdAt, updatedAt.")
    @refusals
    async def get_help_document(id: Annotated[str, Field(description="the document's _id")]) -> HelpDocument:
        async with reads.connection() as (conn, who):
            document = await published_document(conn, who.org_id, _id(id, "document"))
        if document is None:
            raise NotFound("document not found (only published documents are shown)")
        return HelpDocument(id=str(document.id), website_id=str(document.website_id), title=document.title,
                            locale=document.locale, category=document.category, published=document.published,
                            content=document.content, created_at=_time(document.created_at),
                            updated_at=_time(document.updated_at))

    # -- campaigns: read, never sent or changed here ---------------------------------------------------

    @mcp.tool(name="list_campaigns", title="List campaigns", annotations=READ,
              description="The organization's campaigns (100 a page, oldest first), optionally of one website or "
                          "in one status: id, name, status, schedule, audience definition and stats. Never sends "
                          "or changes a campaign.")
    @refusals
    async def list_campaigns(
            websiteId: Annotated[str | None, Field(description="one website's id; omit for all")] = None,
            status: Annotated[Literal[STATUSES] | None, Field(  # type: ignore[valid-type]
                description="draft, scheduled, sending, sent or cancelled")] = None,
            cursor: Annotated[str | None, Field(description="nextCursor of the previous page")] = None,
    ) -> CampaignList:
        params = {"pagination": "cursor"} | {name: value for name, value in (
            ("websiteId", websiteId), ("status", status), ("cursor", cursor)) if value is not None}
        if websiteId is not None:
            params["websiteId"] = str(_id(websiteId, "website"))
        async with reads.connection() as (conn, who):
            page = await campaigns.list_campaigns(conn, who.org_id, params)
        return CampaignList(campaigns=[_campaign(c) for c in page.items], next_cursor=page.next_cursor)

    @mcp.tool(name="inspect_campaign", title="Inspect a campaign", annotations=READ,
              description="One campaign: name, status, schedule, audience definition, how many customers the "
                          "audience holds now, and its stats (recipients, sent, replied). Never sends or changes "
                          "it, and never lists the customers.")
    @refusals
    async def inspect_campaign(id: Annotated[str, Field(description="the campaign's id")]) -> CampaignInspection:
        async with reads.connection() as (conn, who):
            campaign = await campaigns.read_campaign(conn, who.org_id, _id(id, "campaign"))
            size = await campaigns.audience_size(conn, who.org_id, campaign.website_id, campaign.audience)
        return CampaignInspection(**_campaign(campaign).model_dump(), audience_size=size)

    # -- writes --------------------------------------------------------------------------------------

    @mcp.tool(name="send_operator_reply", title="Send a reply",
              annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                          open_world_hint=True),
              description="Posts exactly `content` into the conversation as the signed-in operator; the visitor "
                          "sees it. Returns the conversation id, sent (true) and when. Sending is not idempotent: "
                          "after an ambiguous result (a timeout, a broken connection) do NOT retry with a new "
                          "requestId; repeat the same requestId, which returns the first result unchanged and "
                          "sends nothing again.")
    @refusals
    async def send_operator_reply(
            conversationId: ConversationId,
            content: Annotated[str, Field(description="the reply, sent exactly as given", min_length=1,
                                          max_length=MAX_CONTENT)],
            requestId: Annotated[str, Field(description="a unique id for this reply, chosen by the caller; a "
                                                        "repeated one sends nothing", min_length=1, max_length=200)],
    ) -> ReplySent:
        who, _ = principal()
        conversation = await conversation_created_async(services.store, who, _id(conversationId, "conversation"))
        return await send_once(services.pool, services.store, who, conversation, content, requestId)

    @mcp.tool(name="set_conversation_resolved", title="Resolve or reopen a conversation",
              annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                          open_world_hint=False),
              description="Marks one conversation resolved (true) or reopens it (false); changes no other field. "
                          "Idempotent: returns the conversation id, its resolved state and whether it changed.")
    @refusals
    async def set_conversation_resolved(
            conversationId: ConversationId,
            resolved: Annotated[bool, Field(description="true to resolve, false to reopen")],
    ) -> ResolvedState:
        who, _ = principal()
        changed = await asyncio.to_thread(set_resolved, services.store, who, _id(conversationId, "conversation"),
                                          resolved)
        return ResolvedState(conversation_id=str(_id(conversationId, "conversation")), resolved=resolved,
                             changed=changed)

    return mcp


def _campaign(campaign: campaigns.Campaign) -> Campaign:
    """A campaign without its content (a message body) and without anyone's identity."""
    audience = campaign.audience
    return Campaign(
        id=str(campaign.id), website_id=str(campaign.website_id), name=campaign.name, status=campaign.status,
        scheduled_at=campaign.scheduled_at and _time(campaign.scheduled_at), created_at=_time(campaign.created_at),
        sent_at=campaign.sent_at and _time(campaign.sent_at),
        audience=Audience(language=audience.language and list(audience.language),
                          email_domain=audience.email_domain and list(audience.email_domain),
                          identified=audience.identified, seen_within_days=audience.seen_within_days,
                          has_conversation=audience.has_conversation),
        stats=CampaignStats(recipients=campaign.stats.recipients, sent=campaign.stats.sent,
                            replied=campaign.stats.replied))


def set_resolved(store, who: Principal, conversation_id: uuid.UUID, resolved: bool) -> bool:
    before = conversation_commands.load_flags(store, who, conversation_id)
    conversation_commands.update_flags(store, who, conversation_id,
                                       conversation_commands.ConversationFlags(resolved=resolved))
    return before.resolved != resolved


async def send_once(pool, store, who: Principal, conversation, content: str, request_id: str) -> ReplySent:
    """The reply is sent by the first call with its requestId, which claims the id before it sends; a later
    call (or a concurrent one, once the first is done) answers the first call's result, rebuilt from the
    ledger row that records it (conversation, time sent), and sends nothing.
    The message itself is posted by `POST /api/messages`'s command."""
    key = (who.org_id, who.operator_id, request_id)
    async with pool.connection() as conn:
        claimed = await (await conn.execute(
            "INSERT INTO parley_mcp_replies (org_id, operator_id, request_id, conversation_id) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING RETURNING 1", (*key, conversation.conversation_id))).fetchone()
    if claimed:
        try:
            created = await create_message(store, who, MessageCreate(
                conversation_id=str(conversation.conversation_id), content=content, sender="operator"))
        except CommandError:
            async with pool.connection() as conn:  # refused, so nothing was sent: the id may be used again
                await conn.execute("DELETE FROM parley_mcp_replies WHERE org_id = %s AND operator_id = %s "
                                   "AND request_id = %s", key)
            raise
        async with pool.connection() as conn:
            await conn.execute("UPDATE parley_mcp_replies SET sent_at = %s WHERE org_id = %s AND operator_id = %s "
                               "AND request_id = %s", (created.event.at, *key))
        return ReplySent(conversation_id=str(conversation.conversation_id), sent=True, sent_at=_time(created.event.at))
    deadline = time.monotonic() + DUPLICATE_WAIT_SECONDS
    while True:
        async with pool.connection() as conn:
            row = await (await conn.execute(
                "SELECT conversation_id, sent_at FROM parley_mcp_replies WHERE org_id = %s AND operator_id = %s "
                "AND request_id = %s", key)).fetchone()
        if row and row[0] != conversation.conversation_id:
            raise ToolError("this requestId was already used for a reply in another conversation; nothing was sent")
        if row and row[1] is not None:
            # the first call's result, unchanged: a caller reading "not sent" would send again under a new id
            return ReplySent(conversation_id=str(row[0]), sent=True, sent_at=_time(row[1]))
        if row is None or time.monotonic() > deadline:
            raise ToolError("a reply with this requestId is still being sent or failed; nothing was sent by this "
                            "call. Check the conversation before sending again.")
        await asyncio.sleep(0.05)
