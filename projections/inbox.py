"""The inbox read model: one row per conversation with the flags an operator's inbox filters on, the
counters its tabs show, and who is mentioned where.

- `rm_inbox` carries the conversation's fields plus `unread` (the latest visitor message has no read
  receipt). One partial index per inbox tab serves its page newest first; a covering index on
  (website, last edit time) serves the counts of a time window as an index-only scan.
- `rm_inbox_counts` holds, per website and flag combination, how many conversations there are. A
  trigger on `rm_inbox` keeps it exact whatever statement changes a row, so the unwindowed counts are a
  sum over at most eight rows, however large the website.
- `rm_inbox_tallies` holds, per website, how many conversations each key of `rm_inbox_tally_keys` names:
  the open ones (not resolved, not spam), the open unassigned ones, the open ones of each team and of each
  label, the non-spam ones the visitor wrote in, and the non-spam older rows marked unread without the
  visitor's time. A trigger records each row's changes and each batch folds them in, so it stays exact, so the whole website's reader-independent
  tabs and its label and team counts are a few rows, less what is asleep (a snooze is time-bound, so the
  views subtract the snoozed rows, few, at read time).
- `rm_inbox_mentions` records (operator, conversation) once an internal note mentions `@<e-mail>` of an
  operator of the same organization, with copies of the conversation's scope columns (website, visitor,
  last edit time, spam) that a trigger keeps in step with `rm_inbox`, so an operator's mention count and
  page are an index range of their own mentions. `rm_inbox_operators` is this projection's own e-mail
  directory, so a replay resolves mentions from the events alone.
"""

from __future__ import annotations

import re

from events import types as ev
from projections import workflow
from projections.handlers import CONVERSATIONS_CREATED, Handler, ReadModel, as_json

TABLES = ("rm_inbox", "rm_inbox_counts", "rm_inbox_tallies", "rm_inbox_tally_changes", "rm_inbox_mentions",
          "rm_inbox_members")

DDL = """
CREATE TABLE IF NOT EXISTS rm_inbox (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, customer_id uuid NOT NULL,
    created_at timestamptz NOT NULL, last_edit_time timestamptz NOT NULL,
    resolved boolean NOT NULL DEFAULT false, spam boolean NOT NULL DEFAULT false,
    operator_only boolean NOT NULL DEFAULT false,
    unread boolean NOT NULL DEFAULT false, last_customer_message_id uuid);
CREATE INDEX IF NOT EXISTS rm_inbox_all ON rm_inbox (website_id, last_edit_time DESC, id DESC) WHERE NOT spam;
CREATE INDEX IF NOT EXISTS rm_inbox_unread ON rm_inbox (website_id, last_edit_time DESC, id DESC)
    WHERE unread AND NOT spam;
CREATE INDEX IF NOT EXISTS rm_inbox_unresolved ON rm_inbox (website_id, last_edit_time DESC, id DESC)
    WHERE NOT resolved AND NOT spam;
CREATE INDEX IF NOT EXISTS rm_inbox_resolved ON rm_inbox (website_id, last_edit_time DESC, id DESC)
    WHERE resolved AND NOT spam;
CREATE INDEX IF NOT EXISTS rm_inbox_spam ON rm_inbox (website_id, last_edit_time DESC, id DESC) WHERE spam;
CREATE INDEX IF NOT EXISTS rm_inbox_window ON rm_inbox (website_id, last_edit_time) INCLUDE (spam, resolved, unread);
CREATE INDEX IF NOT EXISTS rm_inbox_customer ON rm_inbox (customer_id);
CREATE TABLE IF NOT EXISTS rm_inbox_counts (
    website_id uuid NOT NULL, spam boolean NOT NULL, resolved boolean NOT NULL, unread boolean NOT NULL,
    n bigint NOT NULL, PRIMARY KEY (website_id, spam, resolved, unread));
CREATE TABLE IF NOT EXISTS rm_inbox_mentions (
    operator_id uuid NOT NULL, conversation_id uuid NOT NULL, website_id uuid NOT NULL, customer_id uuid NOT NULL,
    last_edit_time timestamptz NOT NULL, spam boolean NOT NULL, PRIMARY KEY (operator_id, conversation_id));
CREATE INDEX IF NOT EXISTS rm_inbox_mentions_page ON rm_inbox_mentions
    (operator_id, website_id, last_edit_time DESC, conversation_id DESC) WHERE NOT spam;
CREATE INDEX IF NOT EXISTS rm_inbox_mentions_conversation ON rm_inbox_mentions (conversation_id);
CREATE TABLE IF NOT EXISTS rm_inbox_members (
    org_id uuid NOT NULL, email text NOT NULL, operator_id uuid NOT NULL, PRIMARY KEY (org_id, email));
DO $$ BEGIN  -- before memberships, an operator's e-mail named its home organization only
    IF to_regclass('rm_inbox_operators') IS NOT NULL THEN
        INSERT INTO rm_inbox_members SELECT org_id, email, operator_id FROM rm_inbox_operators ON CONFLICT DO NOTHING;
        DROP TABLE rm_inbox_operators;
    END IF;
END $$;
-- The team's workflow (projections/workflow.py), and what a row shows for triage: the latest message (its first
-- 140 characters), and since when the visitor waits for the team's reply (their first message after it).
ALTER TABLE rm_inbox ADD COLUMN IF NOT EXISTS last_message_from text, ADD COLUMN IF NOT EXISTS last_message_preview text,
    ADD COLUMN IF NOT EXISTS last_message_at timestamptz,
    ADD COLUMN IF NOT EXISTS last_message_internal boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS last_customer_message_at timestamptz, ADD COLUMN IF NOT EXISTS waiting_since timestamptz;
""" + workflow.columns("rm_inbox") + """
CREATE INDEX IF NOT EXISTS rm_inbox_assignee ON rm_inbox (website_id, assignee_id, last_edit_time DESC, id DESC)
    WHERE NOT spam;
CREATE INDEX IF NOT EXISTS rm_inbox_team ON rm_inbox (website_id, team_id, last_edit_time DESC, id DESC)
    WHERE NOT spam;
CREATE OR REPLACE FUNCTION rm_inbox_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE rm_inbox_counts SET n = n - 1
        WHERE website_id = OLD.website_id AND spam = OLD.spam AND resolved = OLD.resolved AND unread = OLD.unread;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO rm_inbox_counts (website_id, spam, resolved, unread, n)
        VALUES (NEW.website_id, NEW.spam, NEW.resolved, NEW.unread, 1)
        ON CONFLICT (website_id, spam, resolved, unread) DO UPDATE SET n = rm_inbox_counts.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE INDEX IF NOT EXISTS rm_inbox_asleep ON rm_inbox (website_id) WHERE snoozed;
CREATE TABLE IF NOT EXISTS rm_inbox_tallies (
    website_id uuid NOT NULL, key text NOT NULL, n bigint NOT NULL, PRIMARY KEY (website_id, key));
CREATE OR REPLACE FUNCTION rm_inbox_tally_keys(spam boolean, resolved boolean, unread boolean, assignee_id uuid,
        team_id uuid, labels uuid[], visitor_at timestamptz) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN spam THEN '{}'::text[] ELSE
        CASE WHEN visitor_at IS NOT NULL THEN ARRAY['visitor-wrote'] WHEN unread THEN ARRAY['unread-before']
             ELSE '{}'::text[] END
        || CASE WHEN resolved THEN '{}'::text[] ELSE
            ARRAY['open'] || CASE WHEN assignee_id IS NULL THEN ARRAY['open-unassigned'] ELSE '{}'::text[] END
            || CASE WHEN team_id IS NULL THEN '{}'::text[] ELSE ARRAY['team:' || team_id] END
            || ARRAY(SELECT 'label:' || label FROM unnest(labels) AS label) END
    END $$;
-- A row's changes of keys are appended to rm_inbox_tally_changes (insert only: a batch of thousands of events in
-- one transaction would otherwise update the same few tally rows thousands of times) and folded into the tallies
-- once per batch (InboxProjection.apply_all, FOLD_TALLIES).
CREATE TABLE IF NOT EXISTS rm_inbox_tally_changes (website_id uuid NOT NULL, key text NOT NULL, n integer NOT NULL);
CREATE OR REPLACE FUNCTION rm_inbox_tally() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before text[] := '{}';
    after text[] := '{}';
    site uuid;
BEGIN
    IF TG_OP <> 'DELETE' THEN
        site := NEW.website_id;
        after := rm_inbox_tally_keys(NEW.spam, NEW.resolved, NEW.unread, NEW.assignee_id, NEW.team_id, NEW.labels,
                                     NEW.last_customer_message_at);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        site := OLD.website_id;
        before := rm_inbox_tally_keys(OLD.spam, OLD.resolved, OLD.unread, OLD.assignee_id, OLD.team_id, OLD.labels,
                                      OLD.last_customer_message_at);
    END IF;
    INSERT INTO rm_inbox_tally_changes (website_id, key, n)
        SELECT site, key, 1 FROM unnest(after) AS key WHERE NOT key = ANY(before)
        UNION ALL SELECT site, key, -1 FROM unnest(before) AS key WHERE NOT key = ANY(after);
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER rm_inbox_tally_rows AFTER INSERT OR DELETE ON rm_inbox
    FOR EACH ROW EXECUTE FUNCTION rm_inbox_tally();
CREATE OR REPLACE TRIGGER rm_inbox_tally_changes
    AFTER UPDATE OF spam, resolved, unread, assignee_id, team_id, labels, last_customer_message_at ON rm_inbox
    FOR EACH ROW WHEN (OLD.spam <> NEW.spam OR OLD.resolved <> NEW.resolved OR OLD.unread <> NEW.unread
        OR OLD.assignee_id IS DISTINCT FROM NEW.assignee_id OR OLD.team_id IS DISTINCT FROM NEW.team_id
        OR OLD.labels <> NEW.labels OR (OLD.last_customer_message_at IS NULL) <> (NEW.last_customer_message_at IS NULL))
    EXECUTE FUNCTION rm_inbox_tally();
DO $$ BEGIN  -- a table made before the tallies: counted once from its rows
    IF NOT EXISTS (SELECT FROM rm_inbox_tallies) THEN
        INSERT INTO rm_inbox_tallies (website_id, key, n) SELECT website_id, key, count(*) FROM rm_inbox,
            unnest(rm_inbox_tally_keys(spam, resolved, unread, assignee_id, team_id, labels, last_customer_message_at))
            AS key GROUP BY website_id, key;
    END IF;
END $$;
CREATE OR REPLACE FUNCTION rm_inbox_mentions_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE rm_inbox_mentions SET last_edit_time = NEW.last_edit_time, spam = NEW.spam
    WHERE conversation_id = NEW.id;
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER rm_inbox_mentions_follow AFTER UPDATE OF last_edit_time, spam ON rm_inbox
    FOR EACH ROW WHEN (OLD.last_edit_time <> NEW.last_edit_time OR OLD.spam <> NEW.spam)
    EXECUTE FUNCTION rm_inbox_mentions_follow();
CREATE OR REPLACE TRIGGER rm_inbox_count_rows AFTER INSERT OR DELETE ON rm_inbox
    FOR EACH ROW EXECUTE FUNCTION rm_inbox_count();
CREATE OR REPLACE TRIGGER rm_inbox_count_flags AFTER UPDATE OF spam, resolved, unread ON rm_inbox
    FOR EACH ROW WHEN (OLD.spam <> NEW.spam OR OLD.resolved <> NEW.resolved OR OLD.unread <> NEW.unread)
    EXECUTE FUNCTION rm_inbox_count();
"""

# `@` followed by an e-mail address; trailing sentence punctuation is not part of the address.
MENTION = re.compile(r"@([^\s@<>()\[\]{},;:\"']+@[^\s@<>()\[\]{},;:\"']+)")


def mentioned_emails(content: str) -> list[str]:
    return sorted({match.rstrip(".!?").lower() for match in MENTION.findall(content)})


async def _operator(conn, e: ev.OperatorCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_inbox_members (org_id, email, operator_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (e.org_id, e.email.lower(), e.operator_id))


async def _member_added(conn, e: ev.OperatorOrgAdded) -> None:
    """A note in an organization the operator joined mentions them by the same e-mail."""
    await conn.execute(
        "INSERT INTO rm_inbox_members (org_id, email, operator_id) SELECT %s, email, operator_id "
        "FROM rm_inbox_members WHERE operator_id = %s LIMIT 1 ON CONFLICT DO NOTHING", (e.org_id, e.operator_id))


async def _member_removed(conn, e: ev.OperatorOrgRemoved) -> None:
    await conn.execute("DELETE FROM rm_inbox_members WHERE org_id = %s AND operator_id = %s",
                       (e.org_id, e.operator_id))


async def _conversations(conn, events: list[ev.ConversationCreated]) -> None:
    await conn.execute(
        "INSERT INTO rm_inbox (id, org_id, website_id, customer_id, created_at, last_edit_time, operator_only) "
        f"SELECT conversation_id, org_id, website_id, customer_id, at, at, operator_only FROM {CONVERSATIONS_CREATED} "
        "ORDER BY n ON CONFLICT DO NOTHING", (as_json(events),))


async def _conversation_updated(conn, e: ev.ConversationUpdated) -> None:
    """The AI agent's hand-off puts an unanswered conversation back among the unread."""
    await conn.execute(
        "UPDATE rm_inbox SET resolved = COALESCE(%s, resolved), spam = COALESCE(%s, spam), "
        "unread = unread OR (%s AND last_customer_message_id IS NOT NULL) WHERE id = %s",
        (e.resolved, e.spam, e.handoff, e.conversation_id))


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    """A conversation's latest visitor message (not an internal note) is unread until a receipt names it,
    or until the AI agent's reply to it (the agent holds the conversation; a hand-off makes it unread)."""
    await conn.execute(
        "WITH m AS (SELECT * FROM ROWS FROM (json_to_recordset(%s::json) AS (message_id uuid, conversation_id uuid, "
        "sender text, internal boolean, at timestamptz, reply_to uuid, author text, content text)) WITH ORDINALITY "
        "AS m(message_id, conversation_id, sender, internal, at, reply_to, author, content, n)), "
        "run AS (SELECT conversation_id, max(at) AS at, (array_agg(message_id ORDER BY n DESC) "
        "FILTER (WHERE sender = 'customer' AND NOT internal))[1] AS visitor_message_id, "
        "max(at) FILTER (WHERE sender = 'customer' AND NOT internal) AS visitor_at, "
        "max(n) FILTER (WHERE sender = 'customer' AND NOT internal) AS visitor_n, "
        "(array_agg(reply_to ORDER BY n DESC) FILTER (WHERE author = 'agent'))[1] AS answered, "
        "max(n) FILTER (WHERE author = 'agent') AS answered_n, "
        "max(n) FILTER (WHERE sender = 'operator' AND NOT internal) AS replied_n, "
        f"{workflow.VISITOR_WROTE}, "
        "(array_agg(sender ORDER BY n DESC))[1] AS last_from, (array_agg(left(content, 140) ORDER BY n DESC))[1] "
        "AS last_preview, (array_agg(internal ORDER BY n DESC))[1] AS last_internal FROM m GROUP BY conversation_id), "
        "waits AS (SELECT run.conversation_id, min(m.at) AS since FROM run JOIN m USING (conversation_id) "
        "WHERE m.sender = 'customer' AND NOT m.internal AND m.n > COALESCE(run.replied_n, 0) "
        "GROUP BY run.conversation_id) "
        "UPDATE rm_inbox AS c SET last_edit_time = GREATEST(c.last_edit_time, run.at), "
        "last_customer_message_id = COALESCE(run.visitor_message_id, c.last_customer_message_id), "
        "last_customer_message_at = COALESCE(run.visitor_at, c.last_customer_message_at), "
        "last_message_from = run.last_from, last_message_preview = run.last_preview, last_message_at = run.at, "
        "last_message_internal = run.last_internal, "
        "waiting_since = CASE WHEN run.replied_n IS NULL THEN COALESCE(c.waiting_since, waits.since) "
        "ELSE waits.since END, "
        f"{workflow.WAKE_ON_VISITOR}, "
        "unread = CASE WHEN run.answered_n > COALESCE(run.visitor_n, 0) "
        "AND run.answered = COALESCE(run.visitor_message_id, c.last_customer_message_id) THEN false "
        "ELSE c.unread OR run.visitor_message_id IS NOT NULL END "
        "FROM run LEFT JOIN waits USING (conversation_id) WHERE c.id = run.conversation_id", (as_json(events),))
    for e in events:
        if e.internal and (emails := mentioned_emails(e.content)):
            await conn.execute(
                "INSERT INTO rm_inbox_mentions (operator_id, conversation_id, website_id, customer_id, "
                "last_edit_time, spam) "
                "SELECT o.operator_id, i.id, i.website_id, i.customer_id, i.last_edit_time, i.spam "
                "FROM rm_inbox_members o JOIN rm_inbox i ON i.id = %s WHERE o.org_id = %s AND o.email = ANY(%s) "
                "ON CONFLICT DO NOTHING", (e.conversation_id, e.org_id, emails))


async def _message_read(conn, e: ev.MessageRead) -> None:
    await conn.execute(
        "UPDATE rm_inbox SET unread = false WHERE id = %s AND last_customer_message_id = %s AND unread",
        (e.conversation_id, e.message_id))


HANDLERS: dict[type, Handler] = {
    **workflow.handlers("rm_inbox"),
    ev.OperatorCreated: _operator,
    ev.OperatorOrgAdded: _member_added,
    ev.OperatorOrgRemoved: _member_removed,
    ev.ConversationUpdated: _conversation_updated,
    ev.MessageRead: _message_read,
}


# What the batch's rows changed, added to the tallies (one statement per batch, whatever its size).
FOLD_TALLIES = """
WITH changed AS (DELETE FROM rm_inbox_tally_changes RETURNING website_id, key, n)
INSERT INTO rm_inbox_tallies (website_id, key, n) SELECT website_id, key, sum(n) FROM changed GROUP BY website_id, key
ON CONFLICT (website_id, key) DO UPDATE SET n = rm_inbox_tallies.n + EXCLUDED.n
"""


class InboxProjection(ReadModel):
    name, ddl, tables = "inbox", DDL, TABLES
    functions = ("rm_inbox_count()", "rm_inbox_mentions_follow()", "rm_inbox_tally()",
                 "rm_inbox_tally_keys(boolean, boolean, boolean, uuid, uuid, uuid[], timestamptz)")
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _messages, ev.ConversationCreated: _conversations}

    async def apply_all(self, conn, batch) -> None:
        """The batch's events, then their changes of the tallies in one statement."""
        await super().apply_all(conn, batch)
        await conn.execute(FOLD_TALLIES)
