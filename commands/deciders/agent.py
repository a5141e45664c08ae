"""A website's AI agent: its configuration (a stream per website), the results of the actions it offers
a visitor (a stream per offer)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import msgspec

from commands.errors import Conflict, NotFound
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded


@dataclass
class AgentState(Folded):
    website_id: uuid.UUID
    org_id: uuid.UUID
    configured: ev.AgentConfigured | None = None  # None: never configured, or removed


def fold_agent(stream_id: uuid.UUID, website: ev.WebsiteCreated, history: list[Recorded]) -> AgentState:
    state = AgentState(stream_id, history[-1].version if history else 0, website.website_id, website.org_id)
    for recorded in history:
        event = recorded.event
        if isinstance(event, ev.AgentConfigured):
            state.configured = event
        elif isinstance(event, ev.AgentRemoved):
            state.configured = None
    return state


def decide_configure(agent: AgentState, *, url: str, enabled: bool, greeting: str | None,
                     fallback_message: str | None, secret: str, at: datetime) -> list[Pending]:
    """The whole configuration (its URL checked already); the bearer `secret` is set with it only when
    this configures the agent for the first time (or again after a removal). Nothing when it is the
    configuration already."""
    configured = ev.AgentConfigured(org_id=agent.org_id, at=at, website_id=agent.website_id, url=url, enabled=enabled,
                                    greeting=greeting, fallback_message=fallback_message)
    if agent.configured is None:
        return agent.follow(configured, ev.AgentSecretSet(org_id=agent.org_id, at=at, website_id=agent.website_id,
                                                          secret=secret))
    if msgspec.structs.replace(agent.configured, at=at) == configured:
        return []
    return agent.follow(configured)


def _configured(agent: AgentState) -> AgentState:
    if agent.configured is None:
        raise NotFound("this website has no agent")
    return agent


def decide_rotate_secret(agent: AgentState, secret: str, at: datetime) -> list[Pending]:
    return _configured(agent).follow(ev.AgentSecretSet(org_id=agent.org_id, at=at, website_id=agent.website_id,
                                                       secret=secret))


def decide_remove(agent: AgentState, at: datetime) -> list[Pending]:
    return _configured(agent).follow(ev.AgentRemoved(org_id=agent.org_id, at=at, website_id=agent.website_id))


@dataclass
class Offer(Folded):
    """An action the agent offered a visitor, and whether the visitor's page answered it."""

    offered: ev.AgentActionOffered
    answered: bool = False


def fold_offer(history: list[Recorded]) -> Offer:
    offered = history[0].event
    assert isinstance(offered, ev.AgentActionOffered)
    return Offer(history[0].stream_id, history[-1].version, offered, answered=len(history) > 1)


def decide_action_result(offer: Offer, content: str, at: datetime) -> list[Pending]:
    """One result per offer."""
    if offer.answered:
        raise Conflict("this action already has a result", "toolCallId")
    offered = offer.offered
    return offer.follow(ev.AgentActionResult(org_id=offered.org_id, at=at, conversation_id=offered.conversation_id,
                                             website_id=offered.website_id, tool_call_id=offered.tool_call_id,
                                             content=content))
