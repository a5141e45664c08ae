"""The write side's decisions, from events folded by hand: no server, no store."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import msgspec
import pytest

from commands.deciders import (agent, api_key, campaign, chat_session, conversation, customer, document, message,
                               webhook, website)
from commands.errors import Conflict, Forbidden, Invalid, NotFound, Unauthorized
from commands.principal import Principal
from events import types as ev
from events.store import Recorded

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
ORG, WEBSITE, CUSTOMER, OPERATOR = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
OPERATOR_PRINCIPAL = Principal("operator", ORG, uuid.uuid4(), operator_id=OPERATOR)
VISITOR = Principal("chat", ORG, uuid.uuid4(), website_id=WEBSITE, customer_id=CUSTOMER)
KEY = Principal("apikey", ORG, uuid.uuid4())


def history(*events: ev.Event) -> list[Recorded]:
    stream_id = uuid.uuid4()
    return [Recorded(i, stream_id, i, event) for i, event in enumerate(events, start=1)]


def events(pending) -> list[ev.Event]:
    return [p.event for p in pending]


def started_conversation(**fields) -> ev.ConversationCreated:
    return ev.ConversationCreated(org_id=ORG, at=AT, conversation_id=uuid.uuid4(), website_id=WEBSITE,
                                  customer_id=CUSTOMER, **fields)


# --- conversations ----------------------------------------------------------------------------------------

def test_flags_record_only_what_differs():
    created = started_conversation()
    state = conversation.fold_conversation(history(created, ev.ConversationUpdated(
        org_id=ORG, at=AT, conversation_id=created.conversation_id, resolved=True)))
    assert state.resolved and not state.spam
    assert conversation.decide_flags(state, OPERATOR_PRINCIPAL.actor, AT, resolved=True) == []
    [pending] = conversation.decide_flags(state, OPERATOR_PRINCIPAL.actor, AT, resolved=False, spam=False)
    assert pending.version == 3 and pending.stream_id == created.conversation_id
    assert (pending.event.resolved, pending.event.spam) == (False, None)


def test_pausing_the_agent_is_recorded_each_time():
    state = conversation.fold_conversation(history(started_conversation()))
    assert events(conversation.decide_flags(state, OPERATOR_PRINCIPAL.actor, AT, agent_paused=True))[0].agent_paused
    [handoff] = events(conversation.decide_handoff(state, "asked for a human", AT))
    assert handoff.handoff and handoff.agent_pause_reason == "asked for a human"


def test_only_operators_flag_or_start_operator_only_conversations():
    with pytest.raises(Forbidden):
        conversation.check_may_flag(KEY)
    with pytest.raises(Forbidden):
        conversation.check_may_start(KEY, operator_only=True)
    conversation.check_may_start(KEY, operator_only=False)


def test_a_conversation_starts_only_with_a_customer_of_its_website():
    website_created = ev.WebsiteCreated(org_id=ORG, at=AT, website_id=WEBSITE, name="w", brand_color=None,
                                        identity_secret="s")
    own = ev.CustomerCreated(org_id=ORG, at=AT, customer_id=CUSTOMER, website_id=WEBSITE)
    other = ev.CustomerCreated(org_id=ORG, at=AT, customer_id=uuid.uuid4(), website_id=uuid.uuid4())
    new = uuid.uuid4()
    [created] = events(conversation.decide_start(KEY, website_created, own, conversation_id=new, operator_only=False,
                                                 at=AT))
    assert created.conversation_id == new and created.actor == KEY.actor
    with pytest.raises(Invalid):
        conversation.decide_start(KEY, website_created, other, conversation_id=new, operator_only=False, at=AT)


def test_metadata_merges_and_is_bounded():
    created = started_conversation(metadata={"plan": "pro"})
    state = conversation.fold_conversation(history(created, ev.ConversationMetadataSet(
        org_id=ORG, at=AT, conversation_id=created.conversation_id, values={"plan": None, "seat": "3"})))
    assert state.metadata == {"seat": "3"}
    assert events(conversation.decide_metadata(state, {"a": "1"}, AT))[0].values == {"a": "1"}
    with pytest.raises(Invalid):
        conversation.decide_metadata(state, {f"k{i}": "v" for i in range(conversation.MAX_METADATA_KEYS)}, AT)


def test_a_visitor_sees_only_their_own_conversations():
    assert conversation.own_conversation(VISITOR, started_conversation())
    with pytest.raises(NotFound):
        conversation.own_conversation(VISITOR, started_conversation(operator_only=True))
    with pytest.raises(NotFound):
        conversation.check_pinned_website(Principal("apikey", ORG, uuid.uuid4(), website_id=uuid.uuid4()),
                                          started_conversation(), "conversation")


# --- messages ---------------------------------------------------------------------------------------------

def posted(conversation_id: uuid.UUID, **fields) -> ev.MessageCreated:
    return ev.MessageCreated(org_id=ORG, at=AT, message_id=uuid.uuid4(), conversation_id=conversation_id,
                             website_id=WEBSITE, content="hi", sender=fields.pop("sender", "customer"), **fields)


def test_a_post_quotes_only_a_message_of_the_same_conversation():
    target = started_conversation()
    earlier, elsewhere = posted(target.conversation_id), posted(uuid.uuid4())
    message_id = uuid.uuid4()
    [pending] = message.decide_post(OPERATOR_PRINCIPAL, target, earlier, message_id=message_id, content="yes",
                                    sender="operator", internal=False, at=AT)
    assert (pending.stream_id, pending.version) == (message_id, 1)
    assert pending.event.reply_to == earlier.message_id and pending.event.operator_id == OPERATOR
    for quoted in (elsewhere, target, None):
        assert events(message.decide_post(OPERATOR_PRINCIPAL, target, quoted, message_id=message_id, content="yes",
                                          sender="operator", internal=False, at=AT))[0].reply_to is None


def test_only_operators_write_internal_notes():
    with pytest.raises(Forbidden):
        message.check_may_post(KEY, internal=True)
    message.check_may_post(OPERATOR_PRINCIPAL, internal=True)


def test_a_read_receipt_is_recorded_once():
    created = posted(uuid.uuid4())
    unread = message.fold_message(history(created))
    [receipt] = events(message.decide_read(unread, KEY.actor, AT))
    read = message.fold_message(history(created, receipt))
    assert read.read and message.decide_read(read, KEY.actor, AT) == []


def test_reactions_one_per_person_and_bounded():
    created = posted(uuid.uuid4(), sender="operator")
    state = message.fold_message(history(created))
    [first] = events(message.decide_reaction(VISITOR, state, "👍", AT))
    state = message.fold_message(history(created, first))
    [second] = events(message.decide_reaction(VISITOR, state, "🎉", AT))
    assert [r.emoji for r in second.reactions] == ["🎉"]
    assert events(message.decide_reaction(VISITOR, state, None, AT))[0].reactions == ()
    with pytest.raises(Invalid):
        message.decide_reaction(VISITOR, state, "two words", AT)
    full = tuple(ev.Reaction(emoji="👍", sender="operator", person_id=uuid.uuid4())
                 for _ in range(message.MAX_REACTIONS))
    state.reactions = full
    with pytest.raises(Conflict):
        message.decide_reaction(VISITOR, state, "👍", AT)


def test_a_visitor_rates_the_teams_replies_in_their_transcript():
    own = started_conversation()
    reply = posted(own.conversation_id, sender="operator")
    message.check_visitor_message(VISITOR, reply, own, str(WEBSITE))
    message.check_rateable_by_visitor(reply)
    [rated] = events(message.decide_rating(VISITOR, message.fold_message(history(reply)), "happy", AT))
    assert (rated.rating, rated.sender) == ("happy", "customer")
    with pytest.raises(NotFound):
        message.check_rateable_by_visitor(posted(own.conversation_id))
    with pytest.raises(NotFound):
        message.check_visitor_message(VISITOR, posted(own.conversation_id, internal=True), own, str(WEBSITE))
    with pytest.raises(NotFound):
        message.check_visitor_message(VISITOR, reply, started_conversation(operator_only=True), str(WEBSITE))


# --- customers and chat sessions --------------------------------------------------------------------------

def new_customer(**fields) -> ev.CustomerCreated:
    return ev.CustomerCreated(org_id=ORG, at=AT, customer_id=CUSTOMER, website_id=WEBSITE, **fields)


def test_customer_updates_and_held_metadata():
    state = customer.fold_customer(history(new_customer(email="a@example.com")))
    assert customer.decide_update(state, {}, AT) == []
    [updated] = customer.decide_update(state, {"email": "b@example.com"}, AT)
    [held] = events(customer.decide_hold_metadata(state, {"plan": "pro"}, AT))
    state = customer.fold_customer(history(new_customer(email="a@example.com"), updated.event, held))
    assert (state.email, state.held_metadata, state.version) == ("b@example.com", {"plan": "pro"}, 3)
    with pytest.raises(NotFound):
        customer.check_pinned_customer(Principal("apikey", ORG, uuid.uuid4(), website_id=uuid.uuid4()), state.created)


def test_a_new_conversation_takes_the_held_metadata():
    empty = customer.fold_customer(history(new_customer()))
    conversation_id = uuid.uuid4()
    assert [type(e) for e in events(customer.decide_start_conversation(VISITOR, empty, conversation_id, AT))] == [
        ev.ConversationCreated]
    holding = customer.fold_customer(history(new_customer(), ev.MetadataPending(
        org_id=ORG, at=AT, customer_id=CUSTOMER, values={"plan": "pro"})))
    created, taken = customer.decide_start_conversation(VISITOR, holding, conversation_id, AT)
    assert created.event.metadata == {"plan": "pro"}
    assert (taken.stream_id, taken.version, type(taken.event)) == (CUSTOMER, 3, ev.MetadataPendingTaken)
    after = customer.fold_customer(history(new_customer(), ev.MetadataPending(
        org_id=ORG, at=AT, customer_id=CUSTOMER, values={"plan": "pro"}), taken.event))
    assert after.held_metadata == {}


WEBSITE_CREATED = ev.WebsiteCreated(org_id=ORG, at=AT, website_id=WEBSITE, name="shop", brand_color=None,
                                    identity_secret="secret")


def test_a_session_checks_the_signed_identity():
    user = chat_session.check_identity("secret", "u1", chat_session.identity_signature("secret", "u1"), None, None)
    assert user.binding == ("customer-user", "u1")
    with pytest.raises(Unauthorized):
        chat_session.check_identity("secret", "u1", "forged", None, None)
    email = "ann@example.com"
    signed = chat_session.check_identity("secret", None, None, email, chat_session.identity_signature("secret", email))
    assert signed.binding == ("customer-email", "ann@example.com")
    # a signature binds the exact string: another spelling of the address, signed as written, binds nothing
    variant = " Ann@Example.com"
    with pytest.raises(Invalid, match="lower case"):
        chat_session.check_identity("secret", None, None, variant, chat_session.identity_signature("secret", variant))
    with pytest.raises(Invalid):
        chat_session.check_identity("secret", None, None, "nobody", chat_session.identity_signature("secret", "nobody"))
    assert chat_session.check_identity("secret", None, None, None, None).binding is None


def session(target: chat_session.SessionTarget, identity: chat_session.Identity) -> list[ev.Event]:
    return events(chat_session.decide_start_session(target, identity, customer_id=uuid.uuid4(),
                                                    session_id=uuid.uuid4(), token_hash="h", at=AT))


def test_the_first_session_of_a_person_reserves_them_and_later_ones_bind_to_them():
    identity = chat_session.Identity("u1", "ann@example.com")
    reserved, created, started = session(chat_session.SessionTarget(WEBSITE_CREATED, None, None), identity)
    assert isinstance(reserved, ev.NameReserved) and reserved.owner_id == created.customer_id == started.customer_id
    known = customer.fold_customer(history(new_customer(email="old@example.com")))
    updated, started = session(chat_session.SessionTarget(WEBSITE_CREATED, CUSTOMER, known), identity)
    assert updated.changes == {"email": "ann@example.com"} and started.customer_id == CUSTOMER
    assert [type(e) for e in session(chat_session.SessionTarget(WEBSITE_CREATED, CUSTOMER, None),
                                     chat_session.Identity("u1", None))] == [ev.ChatSessionStarted]
    anonymous = session(chat_session.SessionTarget(WEBSITE_CREATED, None, None), chat_session.Identity(None, None))
    assert [type(e) for e in anonymous] == [ev.CustomerCreated, ev.ChatSessionStarted]


def test_signing_in_mid_chat_makes_the_anonymous_customer_the_identified_one():
    anonymous = customer.fold_customer(history(new_customer()))
    identity = chat_session.Identity("u1", "ann@example.com")
    reserved, updated, started = session(chat_session.SessionTarget(WEBSITE_CREATED, None, None, anonymous), identity)
    assert reserved.owner_id == updated.customer_id == started.customer_id == CUSTOMER
    assert updated.changes == {"userId": "u1", "email": "ann@example.com"}
    identified = customer.fold_customer(history(new_customer(), updated))
    assert (identified.user_id, identified.email) == ("u1", "ann@example.com")
    # a customer someone vouched for already is never taken over; nor one of another website
    taken = session(chat_session.SessionTarget(WEBSITE_CREATED, None, None, identified), chat_session.Identity("u2", None))
    assert [type(e) for e in taken] == [ev.NameReserved, ev.CustomerCreated, ev.ChatSessionStarted]
    elsewhere = customer.fold_customer(history(ev.CustomerCreated(org_id=ORG, at=AT, customer_id=CUSTOMER,
                                                                  website_id=uuid.uuid4())))
    assert not chat_session.is_anonymous(elsewhere, WEBSITE)
    # an identity bound already keeps its own customer
    bound = uuid.uuid4()
    assert session(chat_session.SessionTarget(WEBSITE_CREATED, bound, None, anonymous), chat_session.Identity("u1", None)
                   )[-1].customer_id == bound


# --- websites ---------------------------------------------------------------------------------------------

def test_widget_settings_change_only_when_they_differ_and_keep_the_website_color():
    state = website.website_state(history(WEBSITE_CREATED))
    assert state.widget == website.Widget()
    [configured] = events(website.decide_widget(state, AT, msgspec.UNSET, {"title": "Acme", "position": "left"}))
    assert (configured.brand_color, configured.title, configured.position, configured.language) == (
        "#4f46e5", "Acme", "left", "en")  # a website without a colour gets the one default
    state = website.website_state(history(WEBSITE_CREATED, configured))
    assert state.brand_color == "#4f46e5" and state.widget.title == "Acme"
    assert website.decide_widget(state, AT, msgspec.UNSET, {"title": "Acme"}) == []
    [recoloured] = events(website.decide_widget(state, AT, "#0f766e", {}))
    assert (recoloured.brand_color, recoloured.title) == ("#0f766e", "Acme")
    with pytest.raises(Invalid):
        website.decide_widget(state, AT, "teal", {})
    # the website's own settings change the colour the widget shows too
    [updated] = events(website.decide_settings(state, AT, brand_color="#111111"))
    assert website.website_state(history(WEBSITE_CREATED, configured, updated)).brand_color == "#111111"



def test_website_settings_change_only_when_they_differ():
    state = website.website_state(history(WEBSITE_CREATED))
    assert website.decide_settings(state, AT) == []
    [updated] = events(website.decide_settings(state, AT, allowed_origins=["HTTPS://Shop.example.com:443/"]))
    assert updated.allowed_origins == ["https://shop.example.com"]
    state = website.website_state(history(WEBSITE_CREATED, updated))
    assert website.decide_settings(state, AT, allowed_origins=["https://shop.example.com"]) == []
    with pytest.raises(Invalid):
        website.decide_settings(state, AT, brand_color="red")
    with pytest.raises(Invalid):
        website.decide_settings(state, AT, allowed_origins=["https://shop.example.com/path"])
    [rotated] = events(website.decide_rotate_identity_secret(state, "new", AT))
    assert website.website_state(history(WEBSITE_CREATED, updated, rotated)).identity_secret == "new"
    assert website.website_state(history(new_customer())) is None


# --- webhook subscriptions --------------------------------------------------------------------------------

SUBSCRIBED = ev.WebhookSubscribed(org_id=ORG, at=AT, subscription_id=uuid.uuid4(), website_id=WEBSITE,
                                  url="https://hooks.example.com/", events=["message.created"], secret="whsec_x")


def test_webhook_edits_and_refusals():
    state = webhook.fold_subscription(history(SUBSCRIBED))
    assert webhook.decide_update(state, AT, url=SUBSCRIBED.url, active=True) == []
    updated, disabled = events(webhook.decide_update(state, AT, events=["customer.created"], active=False))
    assert (updated.url, updated.events, disabled.reason) == (None, ["customer.created"], "disabled by an operator")
    state = webhook.fold_subscription(history(SUBSCRIBED, updated, disabled))
    assert (state.events, state.active, state.version) == (["customer.created"], False, 3)
    with pytest.raises(Invalid):
        webhook.check_immutable(state, "whsec_new", msgspec.UNSET)
    with pytest.raises(Invalid):
        webhook.check_immutable(state, msgspec.UNSET, str(uuid.uuid4()))
    webhook.check_immutable(state, msgspec.UNSET, str(WEBSITE))


def test_failures_disable_only_an_active_subscription():
    active = webhook.fold_subscription(history(SUBSCRIBED))
    [disabled] = events(webhook.decide_disable_after_failures(active, "20 failures", AT))
    inactive = webhook.fold_subscription(history(SUBSCRIBED, disabled))
    assert webhook.decide_disable_after_failures(inactive, "20 failures", AT) == []
    [deleted] = events(webhook.decide_delete(inactive, AT))
    assert webhook.fold_subscription(history(SUBSCRIBED, disabled, deleted)).deleted


# --- documents --------------------------------------------------------------------------------------------

FIELDS = document.Fields("Returns", "en", None, True, "Within 30 days.")


def test_document_updates_and_deletion():
    created = document.created(ORG, WEBSITE, uuid.uuid4(), FIELDS, AT)
    state = document.fold_document(history(created))
    assert document.decide_update(state, {"title": "Returns"}, AT) == []
    [updated] = events(document.decide_update(state, {"title": "  Refunds ", "published": False}, AT))
    assert (updated.title, updated.published, updated.content) == ("Refunds", False, "Within 30 days.")
    with pytest.raises(Invalid):
        document.decide_update(state, {"title": "  "}, AT)
    [deleted] = events(document.decide_delete(state, AT))
    assert document.fold_document(history(created, updated, deleted)).deleted


def test_an_import_creates_updates_or_leaves_a_document():
    name = document.Folded(uuid.uuid4(), 0)
    new_id = uuid.uuid4()
    reserved, created = document.decide_import(document.Source(name, None), ORG, WEBSITE, "faq/returns.md", FIELDS,
                                               document_id=new_id, at=AT)
    assert (reserved.version, reserved.event.owner_id, created.event.source) == (1, new_id, "faq/returns.md")
    live = document.fold_document(history(created.event))
    found = document.Source(document.Folded(name.stream_id, 1), live)
    assert document.decide_import(found, ORG, WEBSITE, "faq/returns.md", FIELDS, document_id=uuid.uuid4(), at=AT) == []
    changed = document.Fields("Returns", "en", None, True, "Within 60 days.")
    [updated] = events(document.decide_import(found, ORG, WEBSITE, "faq/returns.md", changed, document_id=uuid.uuid4(),
                                              at=AT))
    assert isinstance(updated, ev.DocumentUpdated) and updated.content == "Within 60 days."
    gone = document.fold_document(history(created.event, ev.DocumentDeleted(
        org_id=ORG, at=AT, document_id=new_id, website_id=WEBSITE)))
    again = document.decide_import(document.Source(document.Folded(name.stream_id, 1), gone), ORG, WEBSITE,
                                   "faq/returns.md", FIELDS, document_id=uuid.uuid4(), at=AT)
    assert again[0].version == 2 and isinstance(again[1].event, ev.DocumentCreated)


# --- API keys ---------------------------------------------------------------------------------------------

def test_a_key_is_revoked_once():
    created = ev.ApiKeyCreated(org_id=ORG, at=AT, key_id=uuid.uuid4(), secret_hash="h", scopes=["messages:read"],
                               website_id=None, rate_per_minute=None)
    [revoked] = events(api_key.decide_revoke(api_key.fold_api_key(history(created)), AT))
    assert api_key.decide_revoke(api_key.fold_api_key(history(created, revoked)), AT) == []


# --- campaigns --------------------------------------------------------------------------------------------

def draft() -> ev.CampaignCreated:
    return ev.CampaignCreated(org_id=ORG, at=AT, campaign_id=uuid.uuid4(), website_id=WEBSITE, name="Spring",
                              content="Hello", audience=ev.Audience())


def test_campaign_moves_follow_its_state():
    created = draft()
    state = campaign.fold_campaign(history(created))
    assert campaign.decide_update(state, {"name": "Spring"}, AT) == []
    [edited] = events(campaign.decide_update(state, {"name": "Summer"}, AT))
    with pytest.raises(Invalid):
        campaign.decide_update(state, {"content": " "}, AT)
    with pytest.raises(Invalid):
        campaign.decide_schedule(state, AT - timedelta(minutes=1), AT)
    [scheduled] = events(campaign.decide_schedule(state, AT + timedelta(days=1), AT))
    state = campaign.fold_campaign(history(created, edited, scheduled))
    assert (state.status, state.content.name) == ("scheduled", "Summer")
    with pytest.raises(campaign.StateConflict) as refused:
        campaign.decide_update(state, {"name": "Autumn"}, AT)
    assert refused.value.extensions == {"campaignStatus": "scheduled"}
    [started] = events(campaign.decide_send(state, AT))
    state = campaign.fold_campaign(history(created, edited, scheduled, started))
    with pytest.raises(campaign.StateConflict):
        campaign.decide_send(state, AT)
    [cancelled] = events(campaign.decide_cancel(state, AT))
    state = campaign.fold_campaign(history(created, edited, scheduled, started, cancelled))
    for refused_move in (campaign.decide_cancel, campaign.decide_delete):
        with pytest.raises(campaign.StateConflict):
            refused_move(state, AT)
    [deleted] = events(campaign.decide_delete(campaign.fold_campaign(history(created)), AT))
    assert campaign.fold_campaign(history(created, deleted)).deleted


# --- the AI agent -----------------------------------------------------------------------------------------

def test_the_first_configuration_sets_the_secret():
    stream = uuid.uuid4()
    settings = {"url": "https://agent.example.com/", "enabled": True, "greeting": None, "fallback_message": None}
    never = agent.fold_agent(stream, WEBSITE_CREATED, [])
    configured, secret_set = events(agent.decide_configure(never, **settings, secret="s1", at=AT))
    assert secret_set.secret == "s1"
    state = agent.fold_agent(stream, WEBSITE_CREATED, history(configured, secret_set))
    assert agent.decide_configure(state, **settings, secret="s2", at=AT) == []
    assert [type(e) for e in events(agent.decide_configure(state, **{**settings, "enabled": False}, secret="s2",
                                                          at=AT))] == [ev.AgentConfigured]
    [removed] = events(agent.decide_remove(state, AT))
    gone = agent.fold_agent(stream, WEBSITE_CREATED, history(configured, secret_set, removed))
    for refused in (lambda: agent.decide_remove(gone, AT), lambda: agent.decide_rotate_secret(gone, "s3", AT)):
        with pytest.raises(NotFound):
            refused()
    assert [type(e) for e in events(agent.decide_configure(gone, **settings, secret="s3", at=AT))] == [
        ev.AgentConfigured, ev.AgentSecretSet]


def test_an_offered_action_takes_one_result():
    offered = ev.AgentActionOffered(org_id=ORG, at=AT, conversation_id=uuid.uuid4(), website_id=WEBSITE,
                                    customer_id=CUSTOMER, agent_run_id=uuid.uuid4(), tool_call_id="call-1",
                                    name="addToCart", arguments="{}")
    [result] = agent.decide_action_result(agent.fold_offer(history(offered)), '{"ok": true}', AT)
    assert result.version == 2 and result.event.tool_call_id == "call-1"
    with pytest.raises(Conflict):
        agent.decide_action_result(agent.fold_offer(history(offered, result.event)), "{}", AT)
