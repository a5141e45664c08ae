"""Every shape a tool or a view returns: explicit allow-lists of safe fields (the contract's exclusion list
keeps customer identities, notes, staff ids, secrets, agent settings, metadata, message bodies, previews
and message ids out). A result is built field by field into these models, never by trimming a REST
record; `extra="forbid"` makes an unlisted field an error rather than a leak."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class ConversationStates(Shape):
    open: int = Field(description="unresolved conversations, spam left out")
    resolved: int
    spam: int
    total: int = Field(description="every conversation, spam included")


class Website(Shape):
    id: str
    name: str = Field(description="the website's vanity id")
    conversations: ConversationStates
    unread: int = Field(description="conversations whose latest visitor message has no read receipt")


class WebsiteList(Shape):
    websites: list[Website]


class Workload(Shape):
    conversations: ConversationStates
    unread: int
    mentions: int = Field(description="conversations whose internal notes mention the signed-in operator")
    oldest_waiting_seconds: float | None = Field(
        description="how long the longest-waiting visitor of an open conversation has waited for a reply")
    median_first_response_seconds_this_week: float | None = Field(
        description="median time to the team's first reply, conversations first answered since Monday 00:00 UTC")
    help_documents_published: int
    active_campaigns: int = Field(description="campaigns scheduled or sending")


class WebsiteSummary(Workload):
    website_id: str
    name: str


class DayActivity(Shape):
    day: str = Field(description="UTC date, YYYY-MM-DD")
    conversations: int = Field(description="conversations started")
    visitor_messages: int
    replies: int = Field(description="the team's replies")


class WorkloadSummary(Workload):
    websites: int
    days: list[DayActivity] = Field(description="the last 7 UTC days, oldest first, across all websites")


class UnresolvedCount(Shape):
    count: int = Field(description="exact number of unresolved conversations (spam left out)")
    pages_walked: int = Field(description="pages of the unresolved listing walked to its end, added up over the "
                                          "websites (each website's listing is at least one page, empty or not)")
    page_size: int = Field(description="conversations a page holds")
    websites: int = Field(description="websites counted")


class ConversationItem(Shape):
    id: str
    resolved: bool
    spam: bool
    unread: bool
    last_edit_time: str
    message_count: int = Field(description="visible messages (internal notes not counted)")
    awaiting_reply: bool = Field(description="the visitor wrote last and the team has not answered yet")


class ConversationPage(Shape):
    conversations: list[ConversationItem]
    next_cursor: str | None = Field(description="pass as cursor for the next page; null on the last page")


class HelpDocumentMatch(Shape):
    id: str = Field(alias="_id")
    website_id: str
    title: str
    locale: str
    category: str | None
    score: float
    snippet: str


class HelpDocumentMatches(Shape):
    documents: list[HelpDocumentMatch]


class HelpDocument(Shape):
    id: str = Field(alias="_id")
    website_id: str
    title: str
    locale: str
    category: str | None
    published: bool
    content: str
    created_at: str
    updated_at: str


class OverviewTile(Shape):
    website_id: str
    name: str
    open: int
    unread: int
    resolved: int
    spam: int
    oldest_waiting_seconds: float | None


class Overview(Shape):
    websites: list[OverviewTile]


class InboxRow(Shape):
    status: str = Field(description="open, resolved or spam")
    unread: bool
    awaiting_reply: bool
    last_edit_time: str


class InboxView(Shape):
    website_id: str
    name: str
    rows: list[InboxRow] = Field(description="the 50 most recently active conversations, newest first")


class ActivityView(Shape):
    website_id: str
    name: str
    days: list[DayActivity]


class Audience(Shape):
    """A campaign's audience definition: filters over the website's customers (never the customers)."""

    language: list[str] | None
    email_domain: list[str] | None
    identified: bool | None
    seen_within_days: int | None
    has_conversation: bool | None


class CampaignStats(Shape):
    recipients: int = Field(description="0 until the send resolves the audience")
    sent: int
    replied: int = Field(description="recipients who wrote back in the campaign's conversation")


class Campaign(Shape):
    id: str
    website_id: str
    name: str
    status: str = Field(description="draft, scheduled, sending, sent or cancelled")
    scheduled_at: str | None
    created_at: str
    sent_at: str | None
    audience: Audience
    stats: CampaignStats


class CampaignList(Shape):
    campaigns: list[Campaign]
    next_cursor: str | None = Field(description="pass as cursor for the next page; null on the last page")


class CampaignInspection(Campaign):
    audience_size: int = Field(description="how many customers the audience holds now")


class ReplySent(Shape):
    conversation_id: str
    sent: bool = Field(description="true: the reply was sent, by this call or by the first call with its requestId "
                                   "(a repeated requestId returns the first result unchanged)")
    sent_at: str


class ResolvedState(Shape):
    conversation_id: str
    resolved: bool
    changed: bool = Field(description="false when the conversation was already in that state")
