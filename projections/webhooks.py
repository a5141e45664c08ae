"""The webhook read model and the delivery outbox, filled by one projection.

Applying the stream in order, exactly once and with the position in the same transaction, this
projection keeps the subscriptions table (what the API lists and what the dispatcher delivers to) and
inserts one due delivery per matching active subscription for every deliverable event. A delivery is
therefore recorded, durably, before anyone attempts it; the dispatcher in `delivery/webhooks.py` then
works the table. A rebuild drops only the subscriptions: the deliveries and their attempts are the
log, and a replay finds its deliveries already there (one per subscription and position)."""

from __future__ import annotations

import uuid
from typing import Sequence

import psycopg

from commands.webhooks import EVERY_EVENT, FIRST_EVENT_NAMES
from projections.handlers import CONVERSATIONS_CREATED, as_json, runs
from projections.views.identities import identities
from projections.views.payloads import WORKFLOW_EVENTS, webhook_event, workflow_webhook_event
from events import types as ev
from events.store import Recorded
from events.ids import new_id

WAKE_CHANNEL = "parley_webhooks"  # notified when deliveries become due, so the dispatcher starts at once

# Each group is created in one transaction; its last index is how `create` tells that it exists.
SUBSCRIPTIONS_DDL = ("rm_webhook_subscriptions_org", """
CREATE TABLE IF NOT EXISTS rm_webhook_private_conversations (id uuid PRIMARY KEY);
CREATE TABLE IF NOT EXISTS rm_webhook_subscriptions (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, url text NOT NULL,
    events text[] NOT NULL, secret text NOT NULL, active boolean NOT NULL DEFAULT true, disabled_reason text,
    consecutive_failures integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_webhook_subscriptions_website ON rm_webhook_subscriptions (website_id);
CREATE INDEX IF NOT EXISTS rm_webhook_subscriptions_org ON rm_webhook_subscriptions (org_id, id);
""")
LOG_DDL = ("webhook_attempts_delivery", """
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id uuid PRIMARY KEY, subscription_id uuid NOT NULL, org_id uuid NOT NULL, position bigint NOT NULL,
    event text NOT NULL, body bytea NOT NULL,
    status text NOT NULL,  -- pending, succeeded, failed (not retryable or out of time), stopped (disabled)
    next_attempt_at timestamptz, attempts integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL, retry_since timestamptz NOT NULL, updated_at timestamptz NOT NULL,
    UNIQUE (subscription_id, position));
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_log ON webhook_deliveries (subscription_id, id);
CREATE TABLE IF NOT EXISTS webhook_attempts (
    id bigserial PRIMARY KEY, delivery_id uuid NOT NULL, at timestamptz NOT NULL, response_status integer,
    latency_ms integer NOT NULL, error text, response_body text, next_retry_at timestamptz);
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
""")
# Later columns, and the conversations' websites for the events that do not name theirs (the workflow's)
WORKFLOW_DDL = ("rm_webhook_conversations_website", """
ALTER TABLE rm_webhook_subscriptions ADD COLUMN IF NOT EXISTS known_events text[];
CREATE TABLE IF NOT EXISTS rm_webhook_conversations (id uuid PRIMARY KEY, website_id uuid NOT NULL,
    private boolean NOT NULL);
CREATE INDEX IF NOT EXISTS rm_webhook_conversations_website ON rm_webhook_conversations (website_id);
""")


def subscribed(events: list[str], known: list[str] | None, name: str) -> bool:
    """Whether a subscription to `events` gets an event `name`: `*` every one, now and later; an empty list
    the events there were when it was made (`known`; the first three for one recorded before: they were
    all there was); otherwise those named (docs/decisions.md)."""
    if not events:
        return name in (known if known is not None else FIRST_EVENT_NAMES)
    return EVERY_EVENT in events or name in events


INSERT_DELIVERIES = """
INSERT INTO webhook_deliveries (id, subscription_id, org_id, position, event, body, status, next_attempt_at,
                                created_at, retry_since, updated_at)
SELECT d.id, d.subscription_id, %s, %s, %s, %s, 'pending', now(), now(), now(), now()
FROM unnest(%s::uuid[], %s::uuid[]) AS d(id, subscription_id)
ON CONFLICT (subscription_id, position) DO NOTHING
"""


# The events a webhook can be about: each names its website.
WEBSITE_EVENTS = (ev.CustomerCreated, ev.ConversationCreated, ev.MessageCreated, ev.MessageEdited, ev.MessageDeleted)


class WebhookProjection:
    """Keeps the active subscriptions in memory, by website, for the per-event fan-out: loaded from the
    table when first needed, dropped whenever this projection applies a subscription event that adds or
    changes one (a disabled or deleted one is taken out) and whenever its runner starts again, since
    another process may have applied events in between. A transaction that rolls back is applied again by
    the runner, subscription events included, so a cache loaded inside it is dropped again."""

    name = "webhooks"

    def __init__(self) -> None:
        self.subscribers: dict[uuid.UUID, list[tuple[uuid.UUID, list[str], list[str] | None]]] | None = None

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        self.subscribers = None  # the runner (re)starts: whatever happened meanwhile is read again
        # CREATE INDEX IF NOT EXISTS still locks its table, and these tables are written by the projection
        # and the dispatchers at once (a deadlock waiting to happen): DDL runs only for what is missing.
        for last_index, ddl in (SUBSCRIPTIONS_DDL, LOG_DDL, WORKFLOW_DDL):
            if (await (await conn.execute("SELECT to_regclass(%s)", (last_index,))).fetchone())[0] is None:
                await conn.execute(ddl)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        self.subscribers = None
        await conn.execute("DROP TABLE IF EXISTS rm_webhook_subscriptions, rm_webhook_private_conversations, "
                           "rm_webhook_conversations")

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        await self.apply_all(conn, [recorded])

    async def apply_all(self, conn: psycopg.AsyncConnection, batch: Sequence[Recorded]) -> None:
        """Event by event, but a run of new conversations (a campaign's batch) is recorded in one statement."""
        for kind, run in runs(batch):
            if kind is ev.ConversationCreated:
                await conn.execute(
                    f"WITH c AS (SELECT * FROM {CONVERSATIONS_CREATED}), private AS ("
                    "INSERT INTO rm_webhook_private_conversations (id) SELECT conversation_id FROM c WHERE operator_only "
                    "ON CONFLICT DO NOTHING) INSERT INTO rm_webhook_conversations (id, website_id, private) "
                    "SELECT conversation_id, website_id, operator_only FROM c ORDER BY n ON CONFLICT DO NOTHING",
                    (as_json([recorded.event for recorded in run]),))
            for recorded in run:
                await self._apply(conn, recorded)

    async def _apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, (ev.WebhookSubscribed, ev.WebhookUpdated, ev.WebhookEnabled)):
            self.subscribers = None
        elif isinstance(e, (ev.WebhookDisabled, ev.WebhookDeleted)):
            self._forget(e.subscription_id)
        if isinstance(e, ev.WebhookSubscribed):
            await conn.execute(
                "INSERT INTO rm_webhook_subscriptions (id, org_id, website_id, url, events, secret, created_at, "
                "updated_at, known_events) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (e.subscription_id, e.org_id, e.website_id, e.url, e.events, e.secret, e.at, e.at, e.known_events))
        elif isinstance(e, ev.WebhookUpdated):
            await conn.execute(
                "UPDATE rm_webhook_subscriptions SET url = COALESCE(%s, url), events = COALESCE(%s, events), "
                "known_events = CASE WHEN %s::text[] IS NULL THEN known_events ELSE %s END, "
                "updated_at = %s WHERE id = %s",
                (e.url, e.events, e.events, e.known_events, e.at, e.subscription_id))
        elif isinstance(e, ev.WebhookDisabled):
            await conn.execute(
                "UPDATE rm_webhook_subscriptions SET active = false, disabled_reason = %s, updated_at = %s "
                "WHERE id = %s", (e.reason, e.at, e.subscription_id))
        elif isinstance(e, ev.WebhookEnabled):
            await conn.execute(
                "UPDATE rm_webhook_subscriptions SET active = true, disabled_reason = NULL, consecutive_failures = 0, "
                "updated_at = %s WHERE id = %s", (e.at, e.subscription_id))
        elif isinstance(e, ev.WebhookDeleted):
            await conn.execute("DELETE FROM rm_webhook_subscriptions WHERE id = %s", (e.subscription_id,))
        else:
            await self._deliverable(conn, recorded)

    async def _deliverable(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        e = recorded.event
        if isinstance(e, WORKFLOW_EVENTS):
            await self._workflow(conn, recorded)
            return
        if not isinstance(e, WEBSITE_EVENTS):
            return
        # Most websites have no subscription: they cost no query (a read would end the batch's pipeline).
        candidates = (await self._subscriptions(conn)).get(e.website_id)
        if not candidates:
            return
        private, operator = False, None
        if isinstance(e, (ev.MessageCreated, ev.MessageEdited, ev.MessageDeleted)) and not e.internal:
            private = await (await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM rm_webhook_private_conversations WHERE id = %s)",
                (e.conversation_id,))).fetchone() == (True,)
            if isinstance(e, ev.MessageCreated) and e.operator_id is not None and not private:
                operator = (await identities(conn, [e.operator_id])).get(e.operator_id)
        delivered = webhook_event(e, private, operator)
        if delivered is None:
            return
        await self._deliver(conn, recorded, candidates, delivered)

    async def _deliver(self, conn: psycopg.AsyncConnection, recorded: Recorded,
                       candidates: list[tuple[uuid.UUID, list[str], list[str] | None]],
                       delivered: tuple[str, bytes]) -> None:
        name, body = delivered
        subscribers = [subscription_id for subscription_id, events, known in candidates
                       if subscribed(events, known, name)]
        if not subscribers:
            return
        await conn.execute(INSERT_DELIVERIES, (recorded.event.org_id, recorded.position, name, body,
                                               [new_id() for _ in subscribers], subscribers))
        await conn.execute("SELECT pg_notify(%s, '')", (WAKE_CHANNEL,))

    async def _workflow(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        """The workflow's events name their conversation only: its website comes from this projection's own
        table (or, for a conversation made before it was kept, the core read model's, where it never changes)."""
        e = recorded.event
        if isinstance(e, ev.ConversationUpdated) and e.resolved is None:
            return
        found = await (await conn.execute(
            "SELECT website_id, private FROM rm_webhook_conversations WHERE id = %s UNION ALL "
            "SELECT website_id, operator_only FROM rm_conversations WHERE id = %s LIMIT 1",
            (e.conversation_id, e.conversation_id))).fetchone()
        if found is None or found[1]:
            return  # never anything about an operator-only conversation
        candidates = (await self._subscriptions(conn)).get(found[0])
        if not candidates:
            return
        names: dict[uuid.UUID, str] = {}
        if isinstance(e, ev.ConversationLabelsChanged):
            names = dict(await (await conn.execute("SELECT id, name FROM rm_labels WHERE id = ANY(%s)",
                                                   ([*e.added, *e.removed],))).fetchall())
        delivered = workflow_webhook_event(e, found[0], names)
        if delivered is not None:
            await self._deliver(conn, recorded, candidates, delivered)

    def _forget(self, subscription_id: uuid.UUID) -> None:
        """Takes a disabled or deleted subscription out of the cache: what reading the table again would
        give, without reading it (many endpoints failing at once are disabled one event after another)."""
        if self.subscribers is not None:
            self.subscribers = {website: kept for website, listed in self.subscribers.items()
                                if (kept := [entry for entry in listed if entry[0] != subscription_id])}

    async def _subscriptions(self, conn: psycopg.AsyncConnection) -> dict[
            uuid.UUID, list[tuple[uuid.UUID, list[str], list[str] | None]]]:
        """The active subscriptions by website: (id, event names, what an empty list of them stands for)."""
        if self.subscribers is None:
            self.subscribers = {}
            for website_id, subscription_id, events, known in await (await conn.execute(
                    "SELECT website_id, id, events, known_events FROM rm_webhook_subscriptions WHERE active "
                    "ORDER BY id")).fetchall():
                self.subscribers.setdefault(website_id, []).append((subscription_id, events, known))
        return self.subscribers
