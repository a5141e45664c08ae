"""An operator's read state of one conversation: how far they have read it. One stream per (operator,
conversation), so two operators' reads never contend, and a mark only moves forward."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from commands.streams import Folded, name_stream
from events import types as ev
from events.store import Pending, Recorded


@dataclass
class ReadState(Folded):
    org_id: uuid.UUID
    operator_id: uuid.UUID
    conversation_id: uuid.UUID
    up_to: datetime | None = None


def read_state_stream(operator_id: uuid.UUID, conversation_id: uuid.UUID) -> uuid.UUID:
    return name_stream("read-state", f"{operator_id}:{conversation_id}")


def fold_read_state(org_id: uuid.UUID, operator_id: uuid.UUID, conversation_id: uuid.UUID,
                    history: list[Recorded]) -> ReadState:
    state = ReadState(read_state_stream(operator_id, conversation_id), history[-1].version if history else 0,
                      org_id, operator_id, conversation_id)
    for recorded in history:
        if isinstance(recorded.event, ev.ConversationReadByOperator):
            state.up_to = recorded.event.up_to
    return state


def decide_read(state: ReadState, message_id: uuid.UUID, written_at: datetime, at: datetime) -> list[Pending]:
    """Read up to the message written at `written_at`: recorded only when it is further than the mark."""
    if state.up_to is not None and written_at <= state.up_to:
        return []
    return state.follow(ev.ConversationReadByOperator(
        org_id=state.org_id, at=at, conversation_id=state.conversation_id, operator_id=state.operator_id,
        message_id=message_id, up_to=written_at))
