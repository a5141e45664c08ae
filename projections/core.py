"""The core read models: the tables the REST API reads for organizations, credentials, websites,
customers, conversations and messages."""

from __future__ import annotations

import msgspec
from psycopg.types.json import Jsonb

from commands.deciders.website import WIDGET_FIELDS
from events import types as ev
from events.store import CREDENTIAL_GENERATION
from projections import workflow
from projections.handlers import CONVERSATIONS_CREATED, Handler, ReadModel, as_json

TABLES = (
    "rm_organizations", "rm_websites", "rm_operators", "rm_operator_tokens", "rm_operator_orgs",
    "rm_operator_revocations", "rm_api_keys", "rm_invitations", "rm_operator_two_factor",
    "rm_organization_security",
    "rm_customers", "rm_conversations", "rm_messages", "rm_operator_avatars",
    "rm_teams", "rm_labels", "rm_operator_reads",
)

DDL = """
CREATE TABLE IF NOT EXISTS rm_organizations (
    id uuid PRIMARY KEY, name text NOT NULL, created_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS rm_websites (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, name text NOT NULL UNIQUE, brand_color text,
    identity_secret text NOT NULL, created_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_websites_org ON rm_websites (org_id, id);
-- Columns later versions added: a read model made by an earlier one gains them (and replays nothing).
ALTER TABLE rm_websites ADD COLUMN IF NOT EXISTS allowed_origins text[] NOT NULL DEFAULT '{}';
-- the widget's settings but the brand color, as WebsiteWidgetConfigured names them; null until configured
ALTER TABLE rm_websites ADD COLUMN IF NOT EXISTS widget jsonb;
CREATE TABLE IF NOT EXISTS rm_operators (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, email text NOT NULL UNIQUE, password_hash text NOT NULL,
    created_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS rm_operator_tokens (
    token_hash text PRIMARY KEY, token_id uuid NOT NULL UNIQUE, operator_id uuid NOT NULL, org_id uuid NOT NULL,
    revoked boolean NOT NULL DEFAULT false);
ALTER TABLE rm_operator_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE rm_operators ADD COLUMN IF NOT EXISTS display_name text;
-- A session as its operator lists it
ALTER TABLE rm_operator_tokens ADD COLUMN IF NOT EXISTS created_at timestamptz, ADD COLUMN IF NOT EXISTS user_agent text;
ALTER TABLE rm_operator_tokens DROP COLUMN IF EXISTS last_used_at;
-- When a session was last used: the API's to move (at most once a minute), not an event's, so kept apart from
-- the read model (not in TABLES) and never lost by its rebuild.
CREATE TABLE IF NOT EXISTS parley_token_uses (token_id uuid PRIMARY KEY, last_used_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_operator_tokens_operator ON rm_operator_tokens (operator_id);
-- Invitations to join an organization: `pending` until accepted or revoked (or past `expires_at`)
CREATE TABLE IF NOT EXISTS rm_invitations (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, email text NOT NULL, role text NOT NULL,
    expires_at timestamptz NOT NULL, created_at timestamptz NOT NULL, state text NOT NULL DEFAULT 'pending');
CREATE INDEX IF NOT EXISTS rm_invitations_org ON rm_invitations (org_id, state);
-- Every organization an operator belongs to, the one it was created in (`rm_operators.org_id`) included, with
-- its role and status there; a membership that ended stays, as `removed`.
CREATE TABLE IF NOT EXISTS rm_operator_orgs (
    operator_id uuid NOT NULL, org_id uuid NOT NULL, PRIMARY KEY (operator_id, org_id));
ALTER TABLE rm_operator_orgs ADD COLUMN IF NOT EXISTS role text NOT NULL DEFAULT 'owner',
    ADD COLUMN IF NOT EXISTS status text NOT NULL DEFAULT 'active',
    ADD COLUMN IF NOT EXISTS joined_at timestamptz;
CREATE INDEX IF NOT EXISTS rm_operator_orgs_org ON rm_operator_orgs (org_id, operator_id);
-- A read model made before roles held only the joined organizations, and every operator owned its own:
-- what replaying its events now gives.
INSERT INTO rm_operator_orgs (operator_id, org_id, joined_at) SELECT id, org_id, created_at FROM rm_operators
ON CONFLICT DO NOTHING;
-- Sessions (MCP connections included) issued before `revoked_before` are over.
CREATE TABLE IF NOT EXISTS rm_operator_revocations (
    operator_id uuid PRIMARY KEY, revoked_before timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS rm_api_keys (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, secret_hash text NOT NULL UNIQUE, scopes text[] NOT NULL,
    website_id uuid, rate_per_minute integer, revoked boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL);
ALTER TABLE rm_api_keys ADD COLUMN IF NOT EXISTS name text;
CREATE INDEX IF NOT EXISTS rm_api_keys_org ON rm_api_keys (org_id, id);
CREATE TABLE IF NOT EXISTS rm_customers (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, email text, nickname text, phone text,
    language text, user_id text, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_customers_org ON rm_customers (org_id, website_id, id);
CREATE INDEX IF NOT EXISTS rm_customers_in_org ON rm_customers (org_id, id);  -- the list's default order
CREATE INDEX IF NOT EXISTS rm_customers_email ON rm_customers (org_id, email);
CREATE INDEX IF NOT EXISTS rm_customers_user ON rm_customers (org_id, user_id);
ALTER TABLE rm_customers ADD COLUMN IF NOT EXISTS unverified_email text;
CREATE TABLE IF NOT EXISTS rm_conversations (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, customer_id uuid NOT NULL,
    created_at timestamptz NOT NULL, last_edit_time timestamptz NOT NULL,
    resolved boolean NOT NULL DEFAULT false, spam boolean NOT NULL DEFAULT false,
    operator_only boolean NOT NULL DEFAULT false, agent_paused boolean NOT NULL DEFAULT false);
-- The list's default order, newest first, for the whole organization and for one website: each index
-- gives it without a sort, however many conversations the organization has.
CREATE INDEX IF NOT EXISTS rm_conversations_recent ON rm_conversations (org_id, last_edit_time DESC, id DESC);
CREATE INDEX IF NOT EXISTS rm_conversations_website_recent
    ON rm_conversations (org_id, website_id, last_edit_time DESC, id DESC);
CREATE INDEX IF NOT EXISTS rm_conversations_customer ON rm_conversations (org_id, customer_id);
ALTER TABLE rm_conversations ADD COLUMN IF NOT EXISTS metadata jsonb NOT NULL DEFAULT '{}';
CREATE TABLE IF NOT EXISTS rm_messages (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, website_id uuid NOT NULL, conversation_id uuid NOT NULL,
    content text NOT NULL, sender text NOT NULL, reply_to uuid, internal boolean NOT NULL DEFAULT false,
    operator_id uuid, creation_time timestamptz NOT NULL, rating text, rating_time timestamptz,
    reactions jsonb NOT NULL DEFAULT '[]', read_at timestamptz, campaign_id uuid,
    author text, incomplete boolean NOT NULL DEFAULT false, attachments jsonb NOT NULL DEFAULT '[]',
    edited_at timestamptz, deleted boolean NOT NULL DEFAULT false);
-- A table made by an earlier version lacks the columns; checked first, since ALTER TABLE locks the table even
-- when the column is there.
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_messages' AND column_name = 'campaign_id') THEN
        ALTER TABLE rm_messages ADD COLUMN campaign_id uuid;
    END IF;
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_messages' AND column_name = 'author') THEN
        ALTER TABLE rm_messages ADD COLUMN author text, ADD COLUMN incomplete boolean NOT NULL DEFAULT false;
    END IF;
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_messages' AND column_name = 'attachments') THEN
        ALTER TABLE rm_messages ADD COLUMN attachments jsonb NOT NULL DEFAULT '[]';
    END IF;
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_messages' AND column_name = 'deleted') THEN
        ALTER TABLE rm_messages ADD COLUMN edited_at timestamptz, ADD COLUMN deleted boolean NOT NULL DEFAULT false;
    END IF;
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_conversations' AND column_name = 'agent_paused') THEN
        ALTER TABLE rm_conversations ADD COLUMN agent_paused boolean NOT NULL DEFAULT false;
    END IF;
    -- the team's own rating of a message, kept apart from the visitor's `rating`
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_messages' AND column_name = 'operator_rating') THEN
        ALTER TABLE rm_messages ADD COLUMN operator_rating text, ADD COLUMN operator_rating_time timestamptz;
    END IF;
END $$;
-- A conversation's messages are always read within their organization: with the organization first,
-- the index matches the whole filter and the order, so the planner takes it even before statistics exist.
CREATE INDEX IF NOT EXISTS rm_messages_org_conversation ON rm_messages (org_id, conversation_id, creation_time, id);
-- The organization's messages in the list's default order, when no conversation is named.
CREATE INDEX IF NOT EXISTS rm_messages_recent ON rm_messages (org_id, creation_time, id);
-- Indexes an earlier version kept, which those above replace: dropped once the replacements are built,
-- since a drop blocks the table's reads until the transaction ends.
DROP INDEX IF EXISTS rm_conversations_org;
DROP INDEX IF EXISTS rm_messages_conversation;
DROP INDEX IF EXISTS rm_messages_org;
-- Operators' uploaded avatars, by the digest of their bytes (`rm_operators.avatar_digest` names an operator's).
CREATE TABLE IF NOT EXISTS rm_operator_avatars (
    digest text PRIMARY KEY, media_type text NOT NULL, image bytea NOT NULL);
ALTER TABLE rm_operators ADD COLUMN IF NOT EXISTS avatar_digest text;
-- Two-factor sign-in: the operators who turned it on (never their secret, which stays in their stream) and the
-- organizations that require it.
CREATE TABLE IF NOT EXISTS rm_operator_two_factor (operator_id uuid PRIMARY KEY);
CREATE TABLE IF NOT EXISTS rm_organization_security (
    org_id uuid PRIMARY KEY, require_two_factor boolean NOT NULL DEFAULT false);
-- The team's workflow (projections/workflow.py): a conversation's assignee, team, labels, priority, snooze,
-- and `version`, its stream's (the ETag of GET /api/conversations/{id}); a table made before it counts
-- its conversations' events once.
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'rm_conversations' AND column_name = 'version') THEN
        ALTER TABLE rm_conversations ADD COLUMN version integer NOT NULL DEFAULT 1;
        IF to_regclass('parley_events') IS NOT NULL THEN
            UPDATE rm_conversations c SET version = v.version FROM (SELECT originator_id, max(originator_version)
                AS version FROM parley_events WHERE originator_id IN (SELECT id FROM rm_conversations)
                GROUP BY originator_id) v WHERE v.originator_id = c.id;
        END IF;
    END IF;
END $$;
""" + workflow.columns("rm_conversations") + """
CREATE INDEX IF NOT EXISTS rm_conversations_assignee ON rm_conversations (org_id, assignee_id);
CREATE TABLE IF NOT EXISTS rm_teams (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, name text NOT NULL, member_ids uuid[] NOT NULL,
    created_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_teams_org ON rm_teams (org_id, name);
CREATE TABLE IF NOT EXISTS rm_labels (
    id uuid PRIMARY KEY, org_id uuid NOT NULL, name text NOT NULL, color text NOT NULL, created_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS rm_labels_org ON rm_labels (org_id, lower(name));
-- How far each operator has read each conversation (their own unread)
CREATE TABLE IF NOT EXISTS rm_operator_reads (
    operator_id uuid NOT NULL, conversation_id uuid NOT NULL, org_id uuid NOT NULL, up_to timestamptz NOT NULL,
    PRIMARY KEY (operator_id, conversation_id));
-- The availability each operator chose in each organization (`online` reads as away once inactive).
ALTER TABLE rm_operator_orgs ADD COLUMN IF NOT EXISTS availability text NOT NULL DEFAULT 'online';
-- Until when each operator counts as active at the dashboard (projections/views/availability.py): the API's to
-- move, not an event's, so kept apart from the read model (not in TABLES) like parley_token_uses.
CREATE TABLE IF NOT EXISTS parley_operator_activity (
    operator_id uuid NOT NULL, org_id uuid NOT NULL, away_at timestamptz NOT NULL, PRIMARY KEY (org_id, operator_id));
"""


async def _organization(conn, e: ev.OrganizationCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_organizations (id, name, created_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (e.org_id, e.name, e.at))


async def _website(conn, e: ev.WebsiteCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_websites (id, org_id, name, brand_color, identity_secret, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.website_id, e.org_id, e.name, e.brand_color, e.identity_secret, e.at))


async def _website_updated(conn, e: ev.WebsiteUpdated) -> None:
    await conn.execute("UPDATE rm_websites SET brand_color = %s, allowed_origins = %s WHERE id = %s",
                       (e.brand_color, e.allowed_origins, e.website_id))


async def _widget_configured(conn, e: ev.WebsiteWidgetConfigured) -> None:
    widget = {name: getattr(e, name) for name in WIDGET_FIELDS}
    await conn.execute("UPDATE rm_websites SET brand_color = %s, widget = %s WHERE id = %s",
                       (e.brand_color, Jsonb(widget), e.website_id))


async def _identity_secret_rotated(conn, e: ev.WebsiteIdentitySecretRotated) -> None:
    await conn.execute("UPDATE rm_websites SET identity_secret = %s WHERE id = %s", (e.identity_secret, e.website_id))


async def _operator(conn, e: ev.OperatorCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_operators (id, org_id, email, password_hash, display_name, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.operator_id, e.org_id, e.email, e.password_hash, e.display_name, e.at))
    await _joined(conn, e.operator_id, e.org_id, e.role, e.at)


async def _joined(conn, operator_id, org_id, role: str, at) -> None:
    await conn.execute(
        "INSERT INTO rm_operator_orgs (operator_id, org_id, role, status, joined_at) VALUES (%s, %s, %s, 'active', %s) "
        "ON CONFLICT (operator_id, org_id) DO UPDATE SET role = EXCLUDED.role, status = 'active', "
        "joined_at = EXCLUDED.joined_at", (operator_id, org_id, role, at))


async def _token_issued(conn, e: ev.OperatorTokenIssued) -> None:
    await conn.execute(
        "INSERT INTO rm_operator_tokens (token_hash, token_id, operator_id, org_id, expires_at, created_at, "
        "user_agent) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.token_hash, e.token_id, e.operator_id, e.org_id, e.expires_at, e.at, e.user_agent))


async def _credentials_changed(conn) -> None:
    """In the transaction that revokes a credential, or changes what a lookup finds with it (a role, how
    an operator's messages name them): processes that keep credentials they looked up must look them up
    again, and appends checked before now are refused."""
    await conn.execute(f"UPDATE {CREDENTIAL_GENERATION} SET generation = generation + 1")


async def _token_revoked(conn, e: ev.OperatorTokenRevoked) -> None:
    await conn.execute("UPDATE rm_operator_tokens SET revoked = true WHERE token_id = %s", (e.token_id,))
    await _credentials_changed(conn)


async def _org_added(conn, e: ev.OperatorOrgAdded) -> None:
    await _joined(conn, e.operator_id, e.org_id, e.role, e.at)


async def _membership_ended(conn, e: ev.OperatorOrgRemoved | ev.OperatorDisabled, status: str) -> None:
    """The membership is `status` now, and the operator's tokens for the organization are revoked."""
    await conn.execute("UPDATE rm_operator_orgs SET status = %s WHERE operator_id = %s AND org_id = %s",
                       (status, e.operator_id, e.org_id))
    await conn.execute("UPDATE rm_operator_tokens SET revoked = true WHERE operator_id = %s AND org_id = %s",
                       (e.operator_id, e.org_id))
    await _credentials_changed(conn)


async def _org_removed(conn, e: ev.OperatorOrgRemoved) -> None:
    await _membership_ended(conn, e, "removed")


async def _disabled(conn, e: ev.OperatorDisabled) -> None:
    await _membership_ended(conn, e, "disabled")


async def _enabled(conn, e: ev.OperatorEnabled) -> None:
    await conn.execute("UPDATE rm_operator_orgs SET status = 'active' WHERE operator_id = %s AND org_id = %s "
                       "AND status = 'disabled'", (e.operator_id, e.org_id))


async def _role_changed(conn, e: ev.OperatorRoleChanged) -> None:
    await conn.execute("UPDATE rm_operator_orgs SET role = %s WHERE operator_id = %s AND org_id = %s",
                       (e.role, e.operator_id, e.org_id))
    await _credentials_changed(conn)  # a principal kept by a process carries the former role


async def _profile_changed(conn, e: ev.OperatorProfileChanged) -> None:
    await conn.execute("UPDATE rm_operators SET display_name = %s WHERE id = %s", (e.display_name, e.operator_id))
    await _credentials_changed(conn)  # a principal kept by a process carries the former name (`Found.author`)


async def _availability_changed(conn, e: ev.OperatorAvailabilityChanged) -> None:
    await conn.execute("UPDATE rm_operator_orgs SET availability = %s WHERE operator_id = %s AND org_id = %s",
                       (e.status, e.operator_id, e.org_id))


async def _avatar_changed(conn, e: ev.OperatorAvatarSet | ev.OperatorAvatarRemoved) -> None:
    """The operator's avatar is the image (or none); an image no operator shows any more goes."""
    if isinstance(e, ev.OperatorAvatarSet):
        await conn.execute("INSERT INTO rm_operator_avatars (digest, media_type, image) VALUES (%s, %s, %s) "
                           "ON CONFLICT DO NOTHING", (e.digest, e.media_type, e.image))
    digest = e.digest if isinstance(e, ev.OperatorAvatarSet) else None
    await conn.execute(
        "WITH former AS (SELECT avatar_digest AS digest FROM rm_operators WHERE id = %s), "
        "changed AS (UPDATE rm_operators SET avatar_digest = %s WHERE id = %s) "
        "DELETE FROM rm_operator_avatars a USING former WHERE a.digest = former.digest "
        "AND a.digest IS DISTINCT FROM %s AND NOT EXISTS (SELECT FROM rm_operators o WHERE o.avatar_digest = "
        "former.digest AND o.id <> %s)", (e.operator_id, digest, e.operator_id, digest, e.operator_id))
    await _credentials_changed(conn)  # a principal kept by a process carries the former avatar


async def _sessions_revoked(conn, e: ev.OperatorSessionsRevoked) -> None:
    await _sessions_ended(conn, e.operator_id, e.at)


async def _sessions_ended(conn, operator_id, before, kept_token_id=None) -> None:
    """The operator's access tokens but `kept_token_id` are revoked, and its MCP connections made before
    `before` end."""
    await conn.execute("UPDATE rm_operator_tokens SET revoked = true WHERE operator_id = %s "
                       "AND token_id IS DISTINCT FROM %s", (operator_id, kept_token_id))
    await conn.execute(
        "INSERT INTO rm_operator_revocations (operator_id, revoked_before) VALUES (%s, %s) "
        "ON CONFLICT (operator_id) DO UPDATE SET revoked_before = GREATEST(rm_operator_revocations.revoked_before, "
        "EXCLUDED.revoked_before)", (operator_id, before))
    await _credentials_changed(conn)


async def _password_changed(conn, e: ev.OperatorPasswordChanged) -> None:
    """Sign-in checks the new password; every other session ends (MCP connections too)."""
    await conn.execute("UPDATE rm_operators SET password_hash = %s WHERE id = %s", (e.password_hash, e.operator_id))
    await _sessions_ended(conn, e.operator_id, e.at, e.kept_token_id)


async def _invited(conn, e: ev.OperatorInvited) -> None:
    await conn.execute(
        "INSERT INTO rm_invitations (id, org_id, email, role, expires_at, created_at) VALUES (%s, %s, %s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING", (e.invitation_id, e.org_id, e.email, e.role, e.expires_at, e.at))


async def _invitation_ended(conn, e: ev.InvitationAccepted | ev.InvitationRevoked) -> None:
    await conn.execute("UPDATE rm_invitations SET state = %s WHERE id = %s",
                       ("accepted" if isinstance(e, ev.InvitationAccepted) else "revoked", e.invitation_id))


async def _api_key(conn, e: ev.ApiKeyCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_api_keys (id, org_id, secret_hash, scopes, website_id, rate_per_minute, name, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.key_id, e.org_id, e.secret_hash, e.scopes, e.website_id, e.rate_per_minute, e.name, e.at))


async def _api_key_revoked(conn, e: ev.ApiKeyRevoked) -> None:
    await conn.execute("UPDATE rm_api_keys SET revoked = true WHERE id = %s", (e.key_id,))
    await _credentials_changed(conn)


async def _customer(conn, e: ev.CustomerCreated) -> None:
    await conn.execute(
        "INSERT INTO rm_customers (id, org_id, website_id, email, nickname, phone, language, user_id, "
        "created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.customer_id, e.org_id, e.website_id, e.email, e.nickname, e.phone, e.language, e.user_id, e.at, e.at))


CUSTOMER_COLUMNS = {"email": "email", "nickname": "nickname", "phone": "phone", "language": "language",
                    "userId": "user_id", "unverifiedEmail": "unverified_email"}


async def _customer_updated(conn, e: ev.CustomerUpdated) -> None:
    changes = {CUSTOMER_COLUMNS[k]: v for k, v in e.changes.items() if k in CUSTOMER_COLUMNS}
    if not changes:
        return
    assignments = ", ".join(f"{column} = %s" for column in changes)
    await conn.execute(
        f"UPDATE rm_customers SET {assignments}, updated_at = %s WHERE id = %s",
        (*changes.values(), e.at, e.customer_id))


async def _conversations(conn, events: list[ev.ConversationCreated]) -> None:
    await conn.execute(
        "INSERT INTO rm_conversations (id, org_id, website_id, customer_id, created_at, last_edit_time, "
        f"operator_only, metadata) SELECT conversation_id, org_id, website_id, customer_id, at, at, operator_only, "
        f"metadata FROM {CONVERSATIONS_CREATED} ORDER BY n ON CONFLICT DO NOTHING", (as_json(events),))


async def _conversation_metadata(conn, e: ev.ConversationMetadataSet) -> None:
    # `||` sets the given keys, `-` then removes those given as null
    await conn.execute(
        "UPDATE rm_conversations SET metadata = (metadata || %s) - %s::text[], version = version + 1 WHERE id = %s",
        (Jsonb({k: v for k, v in e.values.items() if v is not None}),
         [k for k, v in e.values.items() if v is None], e.conversation_id))


async def _conversation_updated(conn, e: ev.ConversationUpdated) -> None:
    await conn.execute(
        "UPDATE rm_conversations SET resolved = COALESCE(%s, resolved), spam = COALESCE(%s, spam), "
        "agent_paused = COALESCE(%s, agent_paused), version = version + 1 WHERE id = %s", (e.resolved, e.spam, e.agent_paused, e.conversation_id))


async def _messages(conn, events: list[ev.MessageCreated]) -> None:
    """One statement: the run's messages, and their conversations' lastEditTime; a reply of the team's
    own (not the AI agent's, not an internal note) pauses the agent in its conversation."""
    await conn.execute(
        "WITH m AS (SELECT * FROM json_to_recordset(%s::json) AS m(message_id uuid, org_id uuid, website_id uuid, "
        "conversation_id uuid, content text, sender text, reply_to uuid, internal boolean, operator_id uuid, "
        "at timestamptz, campaign_id uuid, author text, incomplete boolean, attachments jsonb)), "
        "inserted AS (INSERT INTO rm_messages (id, org_id, website_id, conversation_id, content, sender, reply_to, "
        "internal, operator_id, creation_time, campaign_id, author, incomplete, attachments) SELECT message_id, "
        "org_id, website_id, conversation_id, content, sender, reply_to, internal, operator_id, at, campaign_id, "
        "author, incomplete, COALESCE(attachments, '[]') FROM m ON CONFLICT DO NOTHING) "
        "UPDATE rm_conversations AS c SET last_edit_time = GREATEST(c.last_edit_time, run.at), "
        f"agent_paused = c.agent_paused OR run.team_replied, {workflow.WAKE_ON_VISITOR} "
        f"FROM (SELECT conversation_id, max(at) AS at, {workflow.VISITOR_WROTE}, "
        "bool_or(sender = 'operator' AND author IS NULL AND campaign_id IS NULL AND NOT internal) AS team_replied "
        "FROM m GROUP BY conversation_id) AS run "
        "WHERE c.id = run.conversation_id", (as_json(events),))


async def _message_read(conn, e: ev.MessageRead) -> None:
    await conn.execute(
        "UPDATE rm_messages SET read_at = COALESCE(read_at, %s) WHERE id = %s", (e.at, e.message_id))


async def _message_rated(conn, e: ev.MessageRated) -> None:
    """The visitor's rating is the message's `rating`; an operator's (`/rating/operator`) is the team's own
    judgement and never stands in for it."""
    columns = "operator_rating = %s, operator_rating_time = %s" if e.sender == "operator" else "rating = %s, rating_time = %s"
    await conn.execute(f"UPDATE rm_messages SET {columns} WHERE id = %s", (e.rating, e.at, e.message_id))


async def _message_edited(conn, e: ev.MessageEdited) -> None:
    await conn.execute("UPDATE rm_messages SET content = %s, edited_at = %s WHERE id = %s",
                       (e.edited_content, e.at, e.message_id))


async def _message_deleted(conn, e: ev.MessageDeleted) -> None:
    """The read model forgets the text: only the event history keeps it."""
    await conn.execute("UPDATE rm_messages SET content = '', deleted = true, reactions = '[]' WHERE id = %s",
                       (e.message_id,))


async def _message_reactions(conn, e: ev.MessageReactionsChanged) -> None:
    await conn.execute("UPDATE rm_messages SET reactions = %s WHERE id = %s",
                       (Jsonb(msgspec.to_builtins(e.reactions)), e.message_id))


# Two-factor changes change what an operator token may do (an enrolment-only one until it is on, where the
# organization requires it): a principal kept by a process is looked up again.
async def _totp_confirmed(conn, e: ev.OperatorTotpConfirmed) -> None:
    await conn.execute("INSERT INTO rm_operator_two_factor (operator_id) VALUES (%s) ON CONFLICT DO NOTHING",
                       (e.operator_id,))
    await _credentials_changed(conn)


async def _totp_removed(conn, e: ev.OperatorTotpRemoved) -> None:
    await conn.execute("DELETE FROM rm_operator_two_factor WHERE operator_id = %s", (e.operator_id,))
    await _credentials_changed(conn)


async def _security_changed(conn, e: ev.OrganizationSecurityChanged) -> None:
    await conn.execute(
        "INSERT INTO rm_organization_security (org_id, require_two_factor) VALUES (%s, %s) "
        "ON CONFLICT (org_id) DO UPDATE SET require_two_factor = EXCLUDED.require_two_factor",
        (e.org_id, e.require_two_factor))
    await _credentials_changed(conn)


async def _team(conn, e: ev.TeamCreated) -> None:
    await conn.execute("INSERT INTO rm_teams (id, org_id, name, member_ids, created_at) VALUES (%s, %s, %s, %s, %s) "
                       "ON CONFLICT DO NOTHING", (e.team_id, e.org_id, e.name, e.member_ids, e.at))


async def _team_renamed(conn, e: ev.TeamRenamed) -> None:
    await conn.execute("UPDATE rm_teams SET name = %s WHERE id = %s", (e.name, e.team_id))


async def _team_members(conn, e: ev.TeamMembersSet) -> None:
    await conn.execute("UPDATE rm_teams SET member_ids = %s WHERE id = %s", (e.member_ids, e.team_id))


async def _team_deleted(conn, e: ev.TeamDeleted) -> None:
    await conn.execute("DELETE FROM rm_teams WHERE id = %s", (e.team_id,))
    await WORKFLOW[ev.TeamDeleted](conn, e)


async def _label(conn, e: ev.LabelCreated | ev.LabelChanged) -> None:
    await conn.execute("INSERT INTO rm_labels (id, org_id, name, color, created_at) VALUES (%s, %s, %s, %s, %s) "
                       "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, color = EXCLUDED.color",
                       (e.label_id, e.org_id, e.name, e.color, e.at))


async def _label_deleted(conn, e: ev.LabelDeleted) -> None:
    await conn.execute("DELETE FROM rm_labels WHERE id = %s", (e.label_id,))
    await WORKFLOW[ev.LabelDeleted](conn, e)


async def _read_by_operator(conn, e: ev.ConversationReadByOperator) -> None:
    await conn.execute(
        "INSERT INTO rm_operator_reads (operator_id, conversation_id, org_id, up_to) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (operator_id, conversation_id) DO UPDATE SET up_to = GREATEST(rm_operator_reads.up_to, "
        "EXCLUDED.up_to)", (e.operator_id, e.conversation_id, e.org_id, e.up_to))


WORKFLOW = workflow.handlers("rm_conversations", then="version = version + 1")

HANDLERS: dict[type, Handler] = {
    **WORKFLOW,
    ev.TeamCreated: _team,
    ev.TeamRenamed: _team_renamed,
    ev.TeamMembersSet: _team_members,
    ev.TeamDeleted: _team_deleted,
    ev.LabelCreated: _label,
    ev.LabelChanged: _label,
    ev.LabelDeleted: _label_deleted,
    ev.ConversationReadByOperator: _read_by_operator,
    ev.OrganizationCreated: _organization,
    ev.WebsiteCreated: _website,
    ev.WebsiteUpdated: _website_updated,
    ev.WebsiteWidgetConfigured: _widget_configured,
    ev.WebsiteIdentitySecretRotated: _identity_secret_rotated,
    ev.OperatorCreated: _operator,
    ev.OperatorTokenIssued: _token_issued,
    ev.OperatorTokenRevoked: _token_revoked,
    ev.OperatorOrgAdded: _org_added,
    ev.OperatorOrgRemoved: _org_removed,
    ev.OperatorSessionsRevoked: _sessions_revoked,
    ev.OperatorRoleChanged: _role_changed,
    ev.OperatorDisabled: _disabled,
    ev.OperatorEnabled: _enabled,
    ev.OperatorProfileChanged: _profile_changed,
    ev.OperatorAvailabilityChanged: _availability_changed,
    ev.OperatorPasswordChanged: _password_changed,
    ev.OperatorInvited: _invited,
    ev.InvitationAccepted: _invitation_ended,
    ev.InvitationRevoked: _invitation_ended,
    ev.ApiKeyCreated: _api_key,
    ev.ApiKeyRevoked: _api_key_revoked,
    ev.CustomerCreated: _customer,
    ev.CustomerUpdated: _customer_updated,
    ev.ConversationUpdated: _conversation_updated,
    ev.ConversationMetadataSet: _conversation_metadata,
    ev.MessageRead: _message_read,
    ev.MessageRated: _message_rated,
    ev.MessageReactionsChanged: _message_reactions,
    ev.MessageEdited: _message_edited,
    ev.MessageDeleted: _message_deleted,
    ev.OperatorAvatarSet: _avatar_changed,
    ev.OperatorAvatarRemoved: _avatar_changed,
    ev.OperatorTotpConfirmed: _totp_confirmed,
    ev.OperatorTotpRemoved: _totp_removed,
    ev.OrganizationSecurityChanged: _security_changed,
}


class CoreProjection(ReadModel):
    name, ddl, tables = "core", DDL, TABLES
    handlers = HANDLERS
    run_handlers = {ev.MessageCreated: _messages, ev.ConversationCreated: _conversations}
