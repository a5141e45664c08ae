"""The attachments read model: each upload (where its bytes are, who uploaded it, whether a message carries
it yet) and the messages that carry it, which decide who may open it (projections/views/attachments.py)."""

from __future__ import annotations

from events import types as ev
from projections.handlers import Handler, ReadModel, as_json

TABLES = ("rm_attachments", "rm_attachment_uses")

DDL = """
CREATE TABLE IF NOT EXISTS rm_attachments (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, name text NOT NULL, content_type text NOT NULL, size bigint NOT NULL,
    blob text NOT NULL, thumbnail text, uploaded_at timestamptz NOT NULL, website_id uuid, customer_id uuid,
    operator_id uuid, attached boolean NOT NULL DEFAULT false);
-- the uploads the sweeper removes: never attached, oldest first
CREATE INDEX IF NOT EXISTS rm_attachments_unattached ON rm_attachments (uploaded_at) WHERE NOT attached;
CREATE INDEX IF NOT EXISTS rm_attachments_blob ON rm_attachments (blob);
CREATE TABLE IF NOT EXISTS rm_attachment_uses (
    attachment_id uuid NOT NULL, message_id uuid NOT NULL, org_id uuid NOT NULL, conversation_id uuid NOT NULL,
    internal boolean NOT NULL, PRIMARY KEY (attachment_id, message_id));
CREATE INDEX IF NOT EXISTS rm_attachment_uses_conversation ON rm_attachment_uses (conversation_id);
"""

USES = """
WITH m AS (SELECT * FROM json_to_recordset(%s::json) AS m(message_id uuid, org_id uuid, conversation_id uuid,
                                                          internal boolean, attachments json)),
used AS (INSERT INTO rm_attachment_uses (attachment_id, message_id, org_id, conversation_id, internal)
         SELECT (a->>'attachment_id')::uuid, m.message_id, m.org_id, m.conversation_id, m.internal
         FROM m CROSS JOIN LATERAL json_array_elements(m.attachments) AS a ON CONFLICT DO NOTHING
         RETURNING attachment_id)
UPDATE rm_attachments SET attached = true WHERE id IN (SELECT attachment_id FROM used) AND NOT attached
"""


async def _uploaded(conn, e: ev.AttachmentUploaded) -> None:
    await conn.execute(
        "INSERT INTO rm_attachments (id, org_id, name, content_type, size, blob, thumbnail, uploaded_at, website_id, "
        "customer_id, operator_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.attachment_id, e.org_id, e.name, e.content_type, e.size, e.blob, e.thumbnail, e.at, e.website_id,
         e.customer_id, e.operator_id))


async def _removed(conn, e: ev.AttachmentRemoved) -> None:
    await conn.execute("DELETE FROM rm_attachment_uses WHERE attachment_id = %s", (e.attachment_id,))
    await conn.execute("DELETE FROM rm_attachments WHERE id = %s", (e.attachment_id,))


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    carrying = [e for e in events if e.attachments]
    if carrying:
        await conn.execute(USES, (as_json(carrying),))


HANDLERS: dict[type, Handler] = {ev.AttachmentUploaded: _uploaded, ev.AttachmentRemoved: _removed}


class AttachmentsProjection(ReadModel):
    name, ddl, tables = "attachments", DDL, TABLES
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _messages}
    handles = (*HANDLERS, ev.MessageCreated)
