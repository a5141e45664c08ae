"""A website's AI agent (its AG-UI endpoint): configuring, rotating the bearer secret, removing it; the
results of the actions it offered a visitor; its hand-offs to the team.

The configuration is a stream per website (`agent_stream`), folded for each decision. The bearer
secret is made here, returned once (to the request that first configures the agent, and to each
rotation) and never again."""

from __future__ import annotations

import secrets
import uuid
from typing import Annotated, Any

import msgspec

from commands.admin import Created
from commands.deciders.agent import (AgentState, Offer, decide_action_result, decide_configure, decide_remove,
                                     decide_rotate_secret, fold_agent, fold_offer)
from commands.deciders.conversation import decide_handoff, fold_conversation
from commands.errors import Invalid, NotFound
from commands.principal import Principal
from commands.streams import execute, load, name_stream, now
from commands.webhooks import valid_url  # the agent's URL passes the webhooks' SSRF guard
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore

DEFAULT_FALLBACK = "A teammate will reply shortly"
MAX_TEXT = 2000
MAX_RESULT = 20_000
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]


class AgentSettings(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """`PUT /api/websites/{websiteName}/agent`: the whole configuration."""

    url: Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
    enabled: bool = True
    greeting: Text | None = None
    fallback_message: Text | None = None


class ActionResult(msgspec.Struct, forbid_unknown_fields=True):
    """`POST /api/chat/actions/{toolCallId}/result`: what the page's handler returned (any JSON value)."""

    result: Any = None


def agent_stream(website_id: uuid.UUID) -> uuid.UUID:
    return name_stream("agent", str(website_id))


def action_stream(customer_id: uuid.UUID, tool_call_id: str) -> uuid.UUID:
    """An offered action and its result: one stream, so a second result (or a second offer of the same
    tool call id to the same visitor) conflicts in the store."""
    return name_stream("agent-action", f"{customer_id}:{tool_call_id}")


def website_by_name(store: EventStore, principal: Principal, website_name: str) -> uuid.UUID:
    """The operator's website of that vanity name; another organization's (or none) is 404."""
    history = store.load(name_stream("website", website_name))
    if not history or history[0].event.org_id != principal.org_id:
        raise NotFound("website not found", "websiteName")
    return history[0].event.owner_id


def website_org(store: EventStore, website_id: uuid.UUID) -> uuid.UUID:
    """The organization of a website named by id (`parley admin`, which acts for no principal)."""
    history = store.load(website_id)
    if not history or not isinstance(history[0].event, ev.WebsiteCreated):
        raise NotFound("website not found", "website")
    return history[0].event.org_id


def settings_of(values: dict) -> AgentSettings:
    """The settings from plain values (the CLI's flags), checked as a request body would be."""
    try:
        return msgspec.convert({k: v for k, v in values.items() if v is not None}, AgentSettings)
    except msgspec.ValidationError as exc:
        raise Invalid(str(exc)) from None


def load_agent(store: EventStore, org_id: uuid.UUID, website_id: uuid.UUID) -> AgentState:
    website = load(store, website_id, ev.WebsiteCreated, org_id, "website").created
    stream = agent_stream(website_id)
    return fold_agent(stream, website, store.load(stream))


def new_secret() -> str:
    return "agsec_" + secrets.token_urlsafe(32)


def configure(store: EventStore, sealer: Sealer, org_id: uuid.UUID, website_id: uuid.UUID, body: AgentSettings,
              allow_private: bool) -> tuple[Created, str | None]:
    """Sets the configuration (decided again when configured concurrently); the answer carries the new
    secret only when this configures the agent for the first time (or again after a removal)."""
    url, secret = valid_url(body.url, allow_private), new_secret()
    sealed = sealer.seal(secret)
    appended = execute(store, org_id, lambda: load_agent(store, org_id, website_id), lambda agent: decide_configure(
        agent, url=url, enabled=body.enabled, greeting=body.greeting, fallback_message=body.fallback_message,
        secret=sealed, at=now()))
    return Created(website_id, appended.position), secret if appended.state.configured is None else None


def rotate_secret(store: EventStore, sealer: Sealer, org_id: uuid.UUID, website_id: uuid.UUID) -> tuple[Created, str]:
    secret = new_secret()
    sealed = sealer.seal(secret)
    appended = execute(store, org_id, lambda: load_agent(store, org_id, website_id),
                       lambda agent: decide_rotate_secret(agent, sealed, now()))
    return Created(website_id, appended.position), secret


def remove(store: EventStore, org_id: uuid.UUID, website_id: uuid.UUID) -> Created:
    appended = execute(store, org_id, lambda: load_agent(store, org_id, website_id),
                       lambda agent: decide_remove(agent, now()))
    return Created(website_id, appended.position)


def load_offer(store: EventStore, principal: Principal, tool_call_id: str) -> Offer:
    history = store.load(action_stream(principal.customer_id, tool_call_id))
    if not history or not isinstance(offered := history[0].event, ev.AgentActionOffered) \
            or offered.org_id != principal.org_id:
        raise NotFound("no action was offered with this tool call id", "toolCallId")
    return fold_offer(history)


def action_result(store: EventStore, principal: Principal, tool_call_id: str, body: ActionResult) -> Created:
    """The visitor's result for an action the agent offered them; a second result (even a concurrent
    one, decided again) is refused."""
    content = msgspec.json.encode(body.result).decode()
    if len(content) > MAX_RESULT:
        raise Invalid(f"the result is longer than {MAX_RESULT} characters of JSON", "result")
    appended = execute(store, principal.org_id, lambda: load_offer(store, principal, tool_call_id),
                       lambda offer: decide_action_result(offer, content, now()))
    return Created(appended.state.offered.conversation_id, appended.position)


def pause(store: EventStore, org_id: uuid.UUID, conversation_id: uuid.UUID, reason: str) -> int:
    """The agent's hand-off (its own, or after a failed run): pauses it in the conversation and tells
    the team why (decided again after a concurrent change). Returns the position."""
    return execute(store, org_id, lambda: fold_conversation(
        load(store, conversation_id, ev.ConversationCreated, org_id, "conversation").history),
        lambda conversation: decide_handoff(conversation, reason, now())).position


def parse_tool_call_id(raw: str) -> str:
    if not raw or len(raw) > 256:
        raise NotFound("no action was offered with this tool call id", "toolCallId")
    return raw

