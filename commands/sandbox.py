"""The keyless sandbox's one write: starting a document-summary job."""

from __future__ import annotations

from commands.admin import Created
from commands.streams import now
from events import types as ev
from events.store import EventStore, Pending
from events.ids import new_id


def create_summary_job(store: EventStore) -> Created:
    job_id = new_id()
    position = store.append(Pending(job_id, 1, ev.SandboxJobCreated(org_id=ev.SANDBOX_ORG_ID, at=now(), job_id=job_id)))
    return Created(job_id, position)
