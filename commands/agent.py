"""A website's AI agent (its AG-UI endpoint): configuring, rotating the bearer secret, removing it; the
results of the actions it offered a visitor; its hand-offs to the team.

The configuration is a stream per website (`agent_stream`), folded here for each decision. The bearer
secret is made here, returned once (to the request that first configures the agent, and to each
rotation) and never again."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, replace
from typing import Annotated, Any

import msgspec

from commands.admin import Created
from commands.errors import Conflict, Invalid, NotFound
from commands.principal import Principal
from commands.streams import load, name_stream, now
from commands.webhooks import valid_url  # the agent's URL passes the webhooks' SSRF guard
from events import types as ev
from events.sealing import Sealer
from events.store import EventStore, Pending, StreamConflict

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


@dataclass(frozen=True)
class AgentState:
    website_id: uuid.UUID
    org_id: uuid.UUID
    configured: ev.AgentConfigured | None  # None: never configured, or removed
    version: int


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
    load(store, website_id, ev.WebsiteCreated, org_id, "website")
    state = AgentState(website_id, org_id, None, 0)
    for recorded in store.load(agent_stream(website_id)):
        e = recorded.event
        state = replace(state, version=recorded.version, configured=(
            e if isinstance(e, ev.AgentConfigured) else None if isinstance(e, ev.AgentRemoved) else state.configured))
    return state


def new_secret() -> str:
    return "agsec_" + secrets.token_urlsafe(32)


def configure(store: EventStore, sealer: Sealer, org_id: uuid.UUID, website_id: uuid.UUID, body: AgentSettings,
              allow_private: bool) -> tuple[Created, str | None]:
    """Sets the configuration; the answer carries the new secret only when this configures the agent
    for the first time (or again after a removal)."""
    url = valid_url(body.url, allow_private)
    while True:
        state = load_agent(store, org_id, website_id)
        at, stream = now(), agent_stream(website_id)
        configured = ev.AgentConfigured(org_id=org_id, at=at, website_id=website_id, url=url, enabled=body.enabled,
                                        greeting=body.greeting, fallback_message=body.fallback_message)
        pending = [Pending(stream, state.version + 1, configured)]
        secret = None
        if state.configured is None:
            secret = new_secret()
            pending.append(Pending(stream, state.version + 2, ev.AgentSecretSet(
                org_id=org_id, at=at, website_id=website_id, secret=sealer.seal(secret))))
        elif msgspec.structs.replace(state.configured, at=at) == configured:
            return Created(website_id, store.org_position(org_id)), None
        try:
            return Created(website_id, store.append(*pending)), secret
        except StreamConflict:
            continue  # configured concurrently: decide again on the fresh state


def rotate_secret(store: EventStore, sealer: Sealer, org_id: uuid.UUID, website_id: uuid.UUID) -> tuple[Created, str]:
    while True:
        state = load_agent(store, org_id, website_id)
        if state.configured is None:
            raise NotFound("this website has no agent")
        secret = new_secret()
        try:
            position = store.append(Pending(agent_stream(website_id), state.version + 1, ev.AgentSecretSet(
                org_id=org_id, at=now(), website_id=website_id, secret=sealer.seal(secret))))
        except StreamConflict:
            continue
        return Created(website_id, position), secret


def remove(store: EventStore, org_id: uuid.UUID, website_id: uuid.UUID) -> Created:
    while True:
        state = load_agent(store, org_id, website_id)
        if state.configured is None:
            raise NotFound("this website has no agent")
        try:
            return Created(website_id, store.append(Pending(agent_stream(website_id), state.version + 1,
                                                            ev.AgentRemoved(org_id=org_id, at=now(),
                                                                            website_id=website_id))))
        except StreamConflict:
            continue


def action_result(store: EventStore, principal: Principal, tool_call_id: str, body: ActionResult) -> Created:
    """The visitor's result for an action the agent offered them; one result per offer."""
    content = msgspec.json.encode(body.result).decode()
    if len(content) > MAX_RESULT:
        raise Invalid(f"the result is longer than {MAX_RESULT} characters of JSON", "result")
    stream = action_stream(principal.customer_id, tool_call_id)
    history = store.load(stream)
    if not history or not isinstance(offered := history[0].event, ev.AgentActionOffered) \
            or offered.org_id != principal.org_id:
        raise NotFound("no action was offered with this tool call id", "toolCallId")
    if len(history) > 1:
        raise Conflict("this action already has a result", "toolCallId")
    try:
        position = store.append(Pending(stream, 2, ev.AgentActionResult(
            org_id=principal.org_id, at=now(), conversation_id=offered.conversation_id,
            website_id=offered.website_id, tool_call_id=tool_call_id, content=content)))
    except StreamConflict:
        raise Conflict("this action already has a result", "toolCallId") from None
    return Created(offered.conversation_id, position)


def pause(store: EventStore, org_id: uuid.UUID, conversation_id: uuid.UUID, reason: str) -> int:
    """The agent's hand-off (its own, or after a failed run): pauses it in the conversation and tells
    the team why. Returns the position."""
    while True:
        conversation = load(store, conversation_id, ev.ConversationCreated, org_id, "conversation")
        try:
            return store.append(Pending(conversation_id, conversation.version + 1, ev.ConversationUpdated(
                org_id=org_id, at=now(), conversation_id=conversation_id, agent_paused=True,
                agent_pause_reason=reason, handoff=True)))
        except StreamConflict:
            continue


def parse_tool_call_id(raw: str) -> str:
    if not raw or len(raw) > 256:
        raise NotFound("no action was offered with this tool call id", "toolCallId")
    return raw

