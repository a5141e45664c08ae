"""Seeding helpers for the inbox and batch tests: conversations, messages and flags at chosen times,
written as events through the event store (the same facts the commands append), then projected."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

import psycopg

from commands import admin
from events import types as ev
from events.store import Pending
from events.ids import new_id


@dataclass
class Seeder:
    server: object  # tests.support.servers.Server
    org_id: uuid.UUID
    website_id: uuid.UUID
    operator_headers: dict[str, str] | None = None

    def append(self, *events: ev.Event) -> int:
        store = self.server.store()
        try:
            position = 0
            for event in events:
                stream_id = next(getattr(event, name) for name in
                                 ("message_id", "conversation_id", "customer_id") if hasattr(event, name))
                version = len(store.load(stream_id)) + 1
                position = store.append(Pending(stream_id, version, event))
        finally:
            store.close()
        self.server.wait_projected(position, "core")
        self.server.wait_projected(position, "inbox")
        return position

    def customer(self) -> uuid.UUID:
        customer_id = new_id()
        self.append(ev.CustomerCreated(org_id=self.org_id, at=datetime.now(timezone.utc), customer_id=customer_id,
                                       website_id=self.website_id))
        return customer_id

    def conversation(self, at: datetime | None = None, customer_id: uuid.UUID | None = None) -> uuid.UUID:
        conversation_id = new_id()
        self.append(ev.ConversationCreated(
            org_id=self.org_id, at=at or datetime.now(timezone.utc), conversation_id=conversation_id,
            website_id=self.website_id, customer_id=customer_id or self.customer()))
        return conversation_id

    def conversations(self, count: int, at: datetime | None = None, resolved: bool = False,
                      spam: bool = False) -> list[uuid.UUID]:
        """`count` conversations, each with a visitor of its own, all at the same time (ties in the
        listing's order), appended at once; resolved or spam as asked."""
        at = at or datetime.now(timezone.utc)
        pending, ids = [], []
        for _ in range(count):
            customer_id, conversation_id = new_id(), new_id()
            ids.append(conversation_id)
            pending += [Pending(customer_id, 1, ev.CustomerCreated(org_id=self.org_id, at=at, customer_id=customer_id,
                                                                   website_id=self.website_id)),
                        Pending(conversation_id, 1, ev.ConversationCreated(
                            org_id=self.org_id, at=at, conversation_id=conversation_id, website_id=self.website_id,
                            customer_id=customer_id))]
            if resolved or spam:
                pending.append(Pending(conversation_id, 2, ev.ConversationUpdated(
                    org_id=self.org_id, at=at, conversation_id=conversation_id, resolved=resolved or None,
                    spam=spam or None)))
        store = self.server.store()
        try:
            position = store.append(*pending)
        finally:
            store.close()
        self.server.wait_projected(position, "core")
        self.server.wait_projected(position, "inbox")
        return ids

    def flags(self, conversation_id: uuid.UUID, *, resolved: bool | None = None, spam: bool | None = None) -> None:
        """Resolving and spam marking through PATCH /api/conversations/{id}, as an operator does it."""
        if self.operator_headers is None:
            self.operator_headers = self.operator()[1]
        body = {name: value for name, value in (("resolved", resolved), ("spam", spam)) if value is not None}
        with self.server.client() as client:
            response = client.patch(f"/api/conversations/{conversation_id}", json=body, headers=self.operator_headers)
        assert response.status_code == 200, response.text
        self.server.wait_projected(int(response.headers["Parley-Position"]), "inbox")

    def operator(self) -> tuple[str, dict[str, str]]:
        """A second operator of the organization: its e-mail and its token headers."""
        email = f"op-{uuid.uuid4().hex[:8]}@example.com"
        store = self.server.store()
        try:
            created, token = admin.create_operator(store, self.org_id, email, "correct horse")
        finally:
            store.close()
        self.server.wait_projected(created.position, "core")
        self.server.wait_projected(created.position, "inbox")
        return email, {"Authorization": f"Token {token}"}

    def open_stream(self, customer_id: uuid.UUID) -> uuid.UUID:
        """A visitor's open realtime stream, recorded as the realtime channel records it: a live API
        instance holding one connection (seeded customers have no chat session to open a real one)."""
        connection_id, instance_id = uuid.uuid4(), uuid.uuid4()
        with psycopg.connect(self.server.database_url, autocommit=True) as conn:
            conn.execute("INSERT INTO parley_presence_instances (instance_id, expires_at) "
                         "VALUES (%s, now() + interval '1 hour')", (instance_id,))
            conn.execute(
                "INSERT INTO parley_presence_connections (connection_id, customer_id, org_id, website_id, "
                "instance_id, opened_at) VALUES (%s, %s, %s, %s, %s, now())",
                (connection_id, customer_id, self.org_id, self.website_id, instance_id))
        return connection_id

    def close_stream(self, connection_id: uuid.UUID) -> None:
        with psycopg.connect(self.server.database_url, autocommit=True) as conn:
            conn.execute("DELETE FROM parley_presence_connections WHERE connection_id = %s", (connection_id,))
