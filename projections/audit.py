"""The audit log: who changed which setting or record of an organization, when, from where, and how.

`AUDITED` says, one line per event type, which events are changes to settings or records and how the
log names them (`action`, the subject's kind and the field holding its id, how the event changes the
subject); `NOT_AUDITED` names the others (a visitor's chat, the workers' progress), so that every event
type is one or the other (tests/unit/test_audit.py). An event type added later needs one line here.

What an entry shows of an event is what its `@public` allow-list lets leave the system: any other field (a
secret, a hash, a URL that may be a credential) shows as "***", whatever its value. `changes` is
`{field: {before, after}}` for the fields the event changed: the projection keeps each subject's latest
state (`rm_audit_subjects`) to tell; a masked field is kept there as a digest, so that a rotation shows as
a change and an unchanged secret does not. Long texts (a document's or a campaign's content) are not
copied into the log.

The actor is the event's `origin` (stamped by the store from the staff credential of the request that
made it, events/origin.py); an event without one was made by the service itself (`system`) where its rule
says so, by the operator it names where its rule says so (a sign-in), and is otherwise shown with kind
null (recorded before origins were kept). Operators' and API keys' names are kept (`rm_audit_names`) for
the log to show beside their ids.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import psycopg
from psycopg.types.json import Jsonb

from events import types as ev
from events.store import Recorded

MASK = "***"
# Fields that are the entry itself rather than a change: the organization, the time, the origin.
ENVELOPE = frozenset({"org_id", "at", "origin"})
# A document's or a campaign's whole text, an avatar's image (its digest shows the change): too long to repeat
OMITTED = frozenset({"content", "image"})


@dataclass(frozen=True)
class Audited:
    """How an event type enters the log. `change`: `set` (the fields given are the subject's new values),
    `patch` (a null field is left as it was), `delete` (the subject is gone: every field it had goes to
    null). `actor_field`: without an origin, the operator named by this field acted (their own sign-in).
    `by_system`: without an origin, the service made it (a worker). `staff_only`: logged only when a staff
    credential made it (a customer record the widget creates is a visitor's doing, not a change of the
    organization's records). `merged`: a dict field whose entries are the changed fields."""

    action: str
    subject: str
    id_field: str
    change: Literal["set", "patch", "delete"] = "set"
    actor_field: str | None = None
    by_system: bool = False
    staff_only: bool = False
    merged: str | None = None


AUDITED: dict[type[ev.Event], Audited] = {
    ev.OrganizationCreated: Audited("organization.created", "organization", "org_id"),
    ev.WebsiteCreated: Audited("website.created", "website", "website_id"),
    ev.WebsiteUpdated: Audited("website.updated", "website", "website_id"),
    ev.WebsiteWidgetConfigured: Audited("website.widget_configured", "website", "website_id"),
    ev.WebsiteIdentitySecretRotated: Audited("website.identity_secret_rotated", "website", "website_id"),
    ev.WebsiteAssignmentConfigured: Audited("website.assignment_configured", "website", "website_id"),
    ev.OperatorCreated: Audited("operator.created", "operator", "operator_id"),
    ev.OperatorOrgAdded: Audited("operator.added", "operator", "operator_id"),
    ev.OperatorOrgRemoved: Audited("operator.removed", "operator", "operator_id"),
    ev.OperatorSessionsRevoked: Audited("operator.sessions_revoked", "operator", "operator_id"),
    ev.OperatorRoleChanged: Audited("operator.role_changed", "operator", "operator_id"),
    ev.OperatorDisabled: Audited("operator.disabled", "operator", "operator_id"),
    ev.OperatorEnabled: Audited("operator.enabled", "operator", "operator_id"),
    ev.OperatorProfileChanged: Audited("operator.profile_changed", "operator", "operator_id"),
    ev.OperatorInvited: Audited("invitation.created", "invitation", "invitation_id"),
    ev.InvitationAccepted: Audited("invitation.accepted", "invitation", "invitation_id", actor_field="operator_id"),
    ev.InvitationRevoked: Audited("invitation.revoked", "invitation", "invitation_id"),
    ev.OperatorPasswordChanged: Audited("operator.password_changed", "operator", "operator_id",
                                        actor_field="operator_id"),
    ev.PasswordResetIssued: Audited("password_reset.issued", "password_reset", "reset_id"),
    ev.PasswordResetUsed: Audited("password_reset.used", "password_reset", "reset_id", actor_field="operator_id"),
    ev.OperatorTokenIssued: Audited("session.created", "session", "token_id", actor_field="operator_id"),
    ev.OperatorTokenRevoked: Audited("session.revoked", "session", "token_id"),
    ev.ApiKeyCreated: Audited("apikey.created", "apikey", "key_id"),
    ev.ApiKeyRevoked: Audited("apikey.revoked", "apikey", "key_id"),
    ev.CustomerCreated: Audited("customer.created", "customer", "customer_id", staff_only=True),
    ev.CustomerUpdated: Audited("customer.updated", "customer", "customer_id", "patch", staff_only=True,
                                merged="changes"),
    ev.WebhookSubscribed: Audited("webhook.created", "webhook", "subscription_id"),
    ev.WebhookUpdated: Audited("webhook.updated", "webhook", "subscription_id", "patch"),
    ev.WebhookDisabled: Audited("webhook.disabled", "webhook", "subscription_id", by_system=True),
    ev.WebhookEnabled: Audited("webhook.enabled", "webhook", "subscription_id"),
    ev.WebhookDeleted: Audited("webhook.deleted", "webhook", "subscription_id", "delete"),
    ev.CannedResponseCreated: Audited("canned_response.created", "canned_response", "response_id"),
    ev.CannedResponseUpdated: Audited("canned_response.updated", "canned_response", "response_id", "patch"),
    ev.CannedResponseDeleted: Audited("canned_response.deleted", "canned_response", "response_id", "delete"),
    ev.AgentConfigured: Audited("agent.configured", "agent", "website_id"),
    ev.AgentSecretSet: Audited("agent.secret_set", "agent", "website_id"),
    ev.AgentRemoved: Audited("agent.removed", "agent", "website_id", "delete"),
    ev.DocumentCreated: Audited("document.created", "document", "document_id"),
    ev.DocumentUpdated: Audited("document.updated", "document", "document_id"),
    ev.DocumentDeleted: Audited("document.deleted", "document", "document_id", "delete"),
    ev.CampaignCreated: Audited("campaign.created", "campaign", "campaign_id"),
    ev.CampaignUpdated: Audited("campaign.updated", "campaign", "campaign_id"),
    ev.CampaignDeleted: Audited("campaign.deleted", "campaign", "campaign_id", "delete"),
    ev.CampaignScheduled: Audited("campaign.scheduled", "campaign", "campaign_id"),
    ev.CampaignStarted: Audited("campaign.started", "campaign", "campaign_id", by_system=True),
    ev.CampaignCancelled: Audited("campaign.cancelled", "campaign", "campaign_id"),
    ev.SsoConfigured: Audited("sso.configured", "sso", "org_id"),
    ev.OperatorAvatarSet: Audited("operator.avatar_set", "operator", "operator_id"),
    ev.OperatorAvatarRemoved: Audited("operator.avatar_removed", "operator", "operator_id"),
    ev.OperatorTotpEnrolled: Audited("operator.two_factor_enrolment_started", "operator", "operator_id",
                                     actor_field="operator_id"),
    ev.OperatorTotpConfirmed: Audited("operator.two_factor_enabled", "operator", "operator_id",
                                      actor_field="operator_id"),
    ev.OperatorTotpRemoved: Audited("operator.two_factor_disabled", "operator", "operator_id",
                                    actor_field="operator_id"),
    ev.RecoveryCodeUsed: Audited("operator.recovery_code_used", "operator", "operator_id", actor_field="operator_id"),
    ev.OrganizationSecurityChanged: Audited("organization.security_changed", "organization", "org_id"),
    ev.BusinessHoursSet: Audited("website.hours_set", "website", "website_id"),
    ev.TeamCreated: Audited("team.created", "team", "team_id"),
    ev.TeamRenamed: Audited("team.renamed", "team", "team_id", "patch"),
    ev.TeamMembersSet: Audited("team.members_set", "team", "team_id", "patch"),
    ev.TeamDeleted: Audited("team.deleted", "team", "team_id", "delete"),
    ev.LabelCreated: Audited("label.created", "label", "label_id"),
    ev.LabelChanged: Audited("label.changed", "label", "label_id"),
    ev.LabelDeleted: Audited("label.deleted", "label", "label_id", "delete"),
    # who changed or took back a message, when, and its text before and after (a message is short, unlike
    # a document: its text is the point of the entry)
    ev.MessageEdited: Audited("message.edited", "message", "message_id"),
    ev.MessageDeleted: Audited("message.deleted", "message", "message_id"),
}

# Not changes to the organization's settings or records: the conversations themselves (a visitor's chat,
# the team's replies and flags), the store's bookkeeping, the workers' progress.
NOT_AUDITED: frozenset[type[ev.Event]] = frozenset({
    ev.NameReserved, ev.ConversationCreated, ev.ConversationUpdated, ev.ConversationMetadataSet,
    ev.MessageCreated, ev.MessageRead, ev.ChatSessionStarted, ev.ChatSessionEnded, ev.CustomerMetadataSet,
    ev.MetadataPending,
    ev.MetadataPendingTaken, ev.ChatContextSet, ev.MessageRated, ev.MessageReactionsChanged, ev.SandboxJobCreated,
    ev.AgentActionOffered, ev.AgentActionResult, ev.AgentRunEnded, ev.CampaignRecipients, ev.CampaignBatchSent,
    ev.CampaignCompleted,
    ev.NotificationsRead, ev.NotificationPreferencesSet,  # an operator's own inbox of notifications
    # the team's workflow on a conversation is the conversation's history (GET .../history), not a setting
    ev.ConversationAssigned, ev.ConversationLabelsChanged, ev.ConversationPrioritySet, ev.ConversationSnoozed,
    ev.ConversationWoken, ev.ConversationReadByOperator,
    ev.OperatorAvailabilityChanged,  # an operator's own online/away/offline: their day, not a setting
    ev.MailUnsubscribed,  # a recipient's own choice, from an e-mail's link: no staff's change
    ev.LinkMailRequested,  # the invitation or reset it mails is `invitation.created` or `password_reset.issued`
    ev.AttachmentUploaded, ev.AttachmentRemoved,  # files of conversations, like their messages
    ev.OperatorTotpCodeUsed,  # a sign-in's code, recorded so it passes once: the sign-in is `session.created`
})

# Where the names shown beside actors' ids come from: the event type, its id field, its name field.
NAMES: dict[type[ev.Event], tuple[str, str]] = {
    ev.OperatorCreated: ("operator_id", "email"),
    ev.OperatorProfileChanged: ("operator_id", "display_name"),
    ev.ApiKeyCreated: ("key_id", "name"),
}

DDL = """
CREATE TABLE IF NOT EXISTS rm_audit_entries (
    position bigint PRIMARY KEY, id uuid NOT NULL, org_id uuid NOT NULL, at timestamptz NOT NULL,
    actor_kind text, actor_id uuid, action text NOT NULL, subject_kind text NOT NULL, subject_id uuid NOT NULL,
    changes jsonb NOT NULL, address text);
CREATE INDEX IF NOT EXISTS rm_audit_entries_org ON rm_audit_entries (org_id, position DESC);
CREATE TABLE IF NOT EXISTS rm_audit_subjects (
    kind text NOT NULL, id uuid NOT NULL, state jsonb NOT NULL, PRIMARY KEY (kind, id));
CREATE TABLE IF NOT EXISTS rm_audit_names (id uuid PRIMARY KEY, name text);
"""
TABLES = ("rm_audit_entries", "rm_audit_subjects", "rm_audit_names")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(msgspec.json.encode(value)).hexdigest()


def recorded_values(event: ev.Event, rule: Audited) -> dict[str, Any]:
    """What the event says of its subject, by camelCase field name, as the subject's state keeps it: a
    public field's value as JSON, any other field's digest."""
    allowed = ev.PUBLIC.get(type(event), ())
    fields = msgspec.structs.asdict(event)
    if rule.merged:
        fields.update(fields.pop(rule.merged) or {})
    values: dict[str, Any] = {}
    for name, value in fields.items():
        if name in ENVELOPE or name in OMITTED or name == rule.id_field:
            continue
        if rule.change == "patch" and value is None:
            continue
        public = name in allowed or (rule.merged is not None and rule.merged in allowed
                                     and name not in event.__struct_fields__)
        # a private field's absence is no secret: only a value is masked
        values[_camel(name)] = msgspec.to_builtins(value) if public or value is None else _digest(
            msgspec.to_builtins(value))
    return values


def shown(value: Any) -> Any:
    return MASK if isinstance(value, str) and value.startswith("sha256:") and len(value) == 71 else value


def changes_between(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`{field: {before, after}}` for each field whose value differs, masked values as "***"."""
    return {name: {"before": shown(before.get(name)), "after": shown(after.get(name))}
            for name in sorted(before.keys() | after.keys()) if before.get(name) != after.get(name)}


def actor_of(event: ev.Event, rule: Audited) -> tuple[str | None, uuid.UUID | None, str | None]:
    """Who made the change (kind, id) and from which address."""
    if isinstance(event.origin, ev.Origin):
        return event.origin.kind, event.origin.id, event.origin.address
    if rule.actor_field:
        return "operator", getattr(event, rule.actor_field), None
    if rule.by_system:
        return "system", None, None
    return None, None, None


def entry_id(position: int) -> uuid.UUID:
    """An entry's id: the same for the same event after a rebuild."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"parley:audit:{position}")


class AuditProjection:
    name = "audit"
    handles = tuple(AUDITED)

    async def create(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute(DDL)

    async def drop(self, conn: psycopg.AsyncConnection) -> None:
        await conn.execute("DROP TABLE IF EXISTS " + ", ".join(TABLES))

    async def apply(self, conn: psycopg.AsyncConnection, recorded: Recorded) -> None:
        event = recorded.event
        rule = AUDITED.get(type(event))
        if rule is None or (rule.staff_only and not isinstance(event.origin, ev.Origin)):
            return
        if naming := NAMES.get(type(event)):
            await conn.execute("INSERT INTO rm_audit_names (id, name) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE "
                               "SET name = COALESCE(EXCLUDED.name, rm_audit_names.name)", (getattr(event, naming[0]), getattr(event, naming[1])))
        subject_id = getattr(event, rule.id_field)
        row = await (await conn.execute("SELECT state FROM rm_audit_subjects WHERE kind = %s AND id = %s",
                                        (rule.subject, subject_id))).fetchone()
        before: dict[str, Any] = row[0] if row else {}
        if rule.change == "delete":
            after: dict[str, Any] = {}
            await conn.execute("DELETE FROM rm_audit_subjects WHERE kind = %s AND id = %s", (rule.subject, subject_id))
        else:
            after = {**before, **recorded_values(event, rule)}
            await conn.execute(
                "INSERT INTO rm_audit_subjects (kind, id, state) VALUES (%s, %s, %s) "
                "ON CONFLICT (kind, id) DO UPDATE SET state = EXCLUDED.state", (rule.subject, subject_id, Jsonb(after)))
        kind, actor_id, address = actor_of(event, rule)
        await conn.execute(
            "INSERT INTO rm_audit_entries (position, id, org_id, at, actor_kind, actor_id, action, subject_kind, "
            "subject_id, changes, address) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (position) DO NOTHING",
            (recorded.position, entry_id(recorded.position), event.org_id, event.at, kind, actor_id, rule.action,
             rule.subject, subject_id, Jsonb(changes_between(before, after)), address))
