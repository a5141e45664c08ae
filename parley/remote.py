"""The everyday operator commands over HTTP, with the token `parley login` stored (docs/cli.md).

Each prints a readable table, or the server's JSON with `--json`. A refusal by the server exits 1 with
its problem `detail` on stderr; a usage error exits 2 (argparse's convention).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import uuid
from collections import Counter
from datetime import datetime, timezone
from typing import Callable

from commands.documents import Fields, import_each

from parley import login as signin
from parley.client import DEFAULT_PROFILE, Api, Profile, Refused, print_json, print_table, read_text

INBOX_FILTERS = ("all", "unread", "unresolved", "resolved", "mentions", "spam", "mine", "unassigned", "snoozed")


class Usage(Exception):
    """A usage error found once the server is asked (exit code 2)."""


def _api(args: argparse.Namespace) -> Api:
    return Api(Profile.load(args.profile))


def _website_id(api: Api, given: str | None) -> str:
    """A website by id or name; none given, the organization's only website."""
    if given:
        try:
            return str(uuid.UUID(given))
        except ValueError:
            return api.get(f"/api/websites/{given}")["_id"]
    websites = api.get("/api/websites")
    if len(websites) != 1:
        names = ", ".join(w.get("websiteName", w["_id"]) for w in websites) or "none"
        raise Usage(f"name the website with --website (this organization has: {names})")
    return websites[0]["_id"]


def _conversation_id(api: Api, given: str) -> str:
    """A conversation by its id, or by a beginning of it that only one of the organization's conversations
    has (a short id copied from a listing)."""
    try:
        return str(uuid.UUID(given))
    except ValueError:
        pass
    prefix = given.strip().lower()
    if not prefix:
        raise Usage("give the conversation's id, or its beginning")
    found = [c["_id"] for c in api.get("/api/conversations", limit=0, fields="_id") if c["_id"].startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise Usage(f"no conversation of this organization has an id beginning with {given!r}")
    raise Usage(f"{len(found)} conversations have an id beginning with {given!r} ({', '.join(found[:5])}"
                f"{', ...' if len(found) > 5 else ''}): give more of it")


def _visitor_names(api: Api, customer_ids: set[str]) -> dict[str, str]:
    """Each customer's nickname or e-mail, as the dashboard names them."""
    names = {}
    for customer_id in customer_ids:
        try:
            found = api.get(f"/api/customers/{customer_id}")
        except Refused:
            found = {}
        names[customer_id] = found.get("nickname") or found.get("email") or f"Visitor {customer_id[-6:]}"
    return names


def _inbox(api: Api, args: argparse.Namespace, website_id: str) -> dict:
    return api.get("/api/conversations", websiteId=website_id, inboxFilter=args.filter, limit=args.limit)


def _print_inbox(api: Api, page: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(page, ensure_ascii=False), flush=True)
        return
    counts = page["counts"]
    names = _visitor_names(api, {c["customerId"] for c in page["conversations"]})
    print("  ".join(f"{name} {counts[name]}" for name in INBOX_FILTERS))
    print_table([{**c, "visitor": names[c["customerId"]], "state": "resolved" if c["resolved"] else "open",
                  "unread": "yes" if c["unread"] else ""}
                 for c in page["conversations"]], ["_id", "visitor", "lastEditTime", "state", "unread"])
    print(flush=True)


def cmd_conversations(args: argparse.Namespace) -> None:
    api = _api(args)
    website_id = _website_id(api, args.website)

    def show() -> None:
        _print_inbox(api, _inbox(api, args, website_id), args.json)
    if not args.watch:
        return show()
    # the inbox once the realtime channel is open (nothing is missed between), then every change the
    # channel announces, and the inbox again
    event = None
    for line in api.lines("/api/realtime", show):
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:") and event:
            data = json.loads(line[5:])
            if data.get("websiteId") in (None, website_id):
                _print_change(event, data, args.json)
                _print_inbox(api, _inbox(api, args, website_id), args.json)
            event = None


def _print_change(event: str, data: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"event": event, "data": data}, ensure_ascii=False), flush=True)
        return
    where = data.get("conversationId") or data.get("_id") or ""
    content = " ".join(str(data.get("content", "")).split())
    author = "an internal note" if data.get("internal") else f"from {data.get('from')}"
    print(f"* {event} {where}" + (f" {author}: {content}" if content else ""), flush=True)


def cmd_conversation(args: argparse.Namespace) -> None:
    api = _api(args)
    conversation_id = _conversation_id(api, args.id)
    conversation = api.get(f"/api/conversations/{conversation_id}")
    messages = api.get("/api/messages", conversationId=conversation_id, sortField="creationTime", limit=args.limit)
    if args.json:
        print_json({"conversation": conversation, "messages": messages})
        return
    state = "resolved" if conversation["resolved"] else "open"
    visitor = _visitor_names(api, {conversation["customerId"]})[conversation["customerId"]]
    print(f"Conversation {conversation['_id']} ({state}), {visitor} (customer {conversation['customerId']})")
    for message in messages:
        kind = "note" if message["internal"] else message["from"]
        files = "".join(f" [file: {a['name']}, {a['size']} bytes]" for a in message.get("attachments", []))
        print(f"[{message['creationTime']}] {kind}: {message['content']}{files}")


def _upload(api: Api, path: str) -> str:
    """The attachment id of a file uploaded as it is read (never read whole into memory)."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        return api.call("POST", "/api/attachments", files={"file": (os.path.basename(path), handle)})["_id"]


def _post_message(args: argparse.Namespace, internal: bool) -> None:
    api = _api(args)
    files = args.attach or []
    text = read_text(args.text) if args.text is not None or not files else ""
    conversation_id = _conversation_id(api, args.id)
    attachment_ids = [_upload(api, path) for path in files]
    message = api.call("POST", "/api/messages", json={
        "conversationId": conversation_id, "content": text, "from": "operator", "internal": internal,
        "attachmentIds": attachment_ids})
    if not internal:
        try:
            _mark_read(api, conversation_id)
        except Refused as exc:  # the reply is sent all the same: say so, and what did not happen
            print(f"parley: the reply is sent, but the conversation stays unread: {exc}", file=sys.stderr)
    if args.json:
        print_json(message)
    else:
        print(f"{'Note' if internal else 'Reply'} {message['_id']} added to {conversation_id}")


def _mark_read(api: Api, conversation_id: str) -> None:
    """The read receipt the dashboard sends once the operator has seen the visitor's latest message: who
    replies has read what they answer, so the conversation leaves the Unread tab."""
    messages = api.get("/api/messages", conversationId=conversation_id, sortField="creationTime", limit=0)
    latest = [m for m in messages if m["from"] == "customer" and not m["internal"]][-1:]
    if latest and not latest[0].get("read"):
        api.call("POST", f"/api/messages/{latest[0]['_id']}/read")


def cmd_reply(args: argparse.Namespace) -> None:
    _post_message(args, internal=False)


def cmd_note(args: argparse.Namespace) -> None:
    _post_message(args, internal=True)


def _set_resolved(args: argparse.Namespace, resolved: bool) -> None:
    api = _api(args)
    conversation_id = _conversation_id(api, args.id)
    conversation = api.call("PATCH", f"/api/conversations/{conversation_id}", json={"resolved": resolved})
    if args.json:
        print_json(conversation)
    else:
        print(f"Conversation {conversation_id} is {'resolved' if resolved else 'open'}")


def cmd_resolve(args: argparse.Namespace) -> None:
    _set_resolved(args, True)


def cmd_reopen(args: argparse.Namespace) -> None:
    _set_resolved(args, False)


def _operator_id(api: Api, given: str) -> str:
    """An operator by `me`, e-mail address or id."""
    if given == "me":
        return api.get("/api/operators/me")["_id"]
    try:
        return str(uuid.UUID(given))
    except ValueError:
        pass
    found = api.get("/api/operators", email=given.strip().lower())
    if len(found) != 1:
        raise Usage(f"no operator of this organization has the e-mail address {given!r}")
    return found[0]["_id"]


def _team_id(api: Api, given: str) -> str:
    """A team by id or name (case aside)."""
    teams = api.get("/api/teams")
    found = [t["_id"] for t in teams if given in (t["_id"], t["_id"][:len(given)]) or t["name"].lower() == given.lower()]
    if len(found) != 1:
        names = ", ".join(t["name"] for t in teams) or "none"
        raise Usage(f"no single team is {given!r} (this organization has: {names})")
    return found[0]


def cmd_assign(args: argparse.Namespace) -> None:
    """Assigns a conversation to an operator (`me` by default) and/or a team, or unassigns it."""
    api = _api(args)
    conversation_id = _conversation_id(api, args.id)
    change: dict[str, str | None] = {}
    if args.unassign:
        change = {"assigneeId": None, "teamId": None}
    else:
        change["assigneeId"] = _operator_id(api, args.operator)
        if args.team:
            change["teamId"] = _team_id(api, args.team)
    conversation = api.call("PATCH", f"/api/conversations/{conversation_id}", json=change)
    if args.json:
        print_json(conversation)
    elif conversation["assigneeId"] is None and conversation["teamId"] is None:
        print(f"Conversation {conversation_id} is unassigned")
    else:
        team = f" (team {conversation['teamId']})" if conversation["teamId"] else ""
        print(f"Conversation {conversation_id} is assigned to {conversation['assigneeId'] or 'nobody'}{team}")


def cmd_docs_search(args: argparse.Namespace) -> None:
    api = _api(args)
    website = _website_id(api, args.website) if args.website else None
    matches = api.get("/api/documents/search", query=args.query, websiteId=website, limit=args.limit)
    if args.json:
        print_json(matches)
    else:
        print_table(matches, ["_id", "title", "score", "snippet"])


def cmd_webhook_deliveries(args: argparse.Namespace) -> None:
    page = _api(args).get(f"/api/webhooksubscriptions/{args.id}/deliveries", status=args.status, limit=args.limit)
    if args.json:
        print_json(page)
    else:
        print_table(page["items"], ["_id", "event", "position", "status", "nextRetryTime", "updatedAt"])


def cmd_events_tail(args: argparse.Namespace) -> None:
    """From now on (or after a position), each event as it commits: one line each."""
    since = None if args.after else datetime.now(timezone.utc).isoformat()

    def opened() -> None:
        print("Following the events (Ctrl-C to stop)", file=sys.stderr, flush=True)
    for line in _api(args).lines("/api/events", opened, follow="true", after=args.after, since=since,
                                 types=args.types):
        if not line.strip():
            continue
        if args.json:
            print(line, flush=True)
            continue
        event = json.loads(line)
        print(f"{event.get('position')}  {event.get('at', '')}  {event.get('type')}", flush=True)


def cmd_operators_invite(args: argparse.Namespace) -> None:
    """Prints the invitation's link to hand over (it is shown once)."""
    link = _api(args).call("POST", "/api/operators/invitations", json={"email": args.email, "role": args.role})
    if args.json:
        print_json(link)
    else:
        print(link["url"])
        print(f"Single use, until {link['expiresAt']}: hand it to {args.email}.", file=sys.stderr)


def cmd_login(args: argparse.Namespace) -> None:
    signin.login(args.url, args.profile, not args.no_browser, args.json)


def cmd_logout(args: argparse.Namespace) -> None:
    signin.logout(args.profile)


def cmd_whoami(args: argparse.Namespace) -> None:
    signin.whoami(args.profile, args.json)


def import_documents(args: argparse.Namespace, files: list[tuple[str, Fields]],
                     progress: Callable[[int, int, str], None]) -> Counter[str]:
    """`parley docs import DIR` over HTTP: each file sent to POST /api/documents/import, which finds a
    re-imported file's document by its path, as the import on the server's machine does."""
    api = Api(Profile.load(args.profile or DEFAULT_PROFILE))
    website = _website_id(api, args.website)
    return import_each(files, lambda source, fields: api.call("POST", "/api/documents/import", json={
        "websiteId": website, "source": source, **dataclasses.asdict(fields)})["outcome"], progress)


def subcommand(parent, name: str, summary: str, example: str) -> argparse.ArgumentParser:
    """A command whose `--help` ends with an example of its use."""
    return parent.add_parser(name, help=summary, description=summary, epilog=f"example:\n  {example}",
                             formatter_class=argparse.RawDescriptionHelpFormatter)


def _command(parent, name: str, func, summary: str, example: str) -> argparse.ArgumentParser:
    command = subcommand(parent, name, summary, example)
    command.add_argument("--profile", default=DEFAULT_PROFILE, help="the stored login to use (default: %(default)s)")
    command.add_argument("--json", action="store_true", help="print the server's JSON")
    command.set_defaults(func=func)
    return command


def add_commands(commands, events, docs) -> None:
    """Wires the client's commands into `parley`'s parser (its `events` and `docs` groups too)."""
    login = _command(commands, "login", cmd_login, "sign in to a Parley server through the browser",
                     "parley login --url https://support.example.com")
    login.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL (default: %(default)s)")
    login.add_argument("--no-browser", action="store_true", help="print the sign-in address instead of opening it")
    _command(commands, "logout", cmd_logout, "revoke the stored token on the server and forget it",
             "parley logout --profile work")
    _command(commands, "whoami", cmd_whoami, "the server, e-mail and organization of the stored login",
             "parley whoami")

    inbox = _command(commands, "conversations", cmd_conversations, "the inbox, with its counts",
                     "parley conversations --website acme-help --filter unread --watch")
    inbox.add_argument("--website", help="the website's name or id (default: the only one)")
    inbox.add_argument("--filter", choices=INBOX_FILTERS, default="all")
    inbox.add_argument("--limit", type=int, default=20)
    inbox.add_argument("--watch", action="store_true", help="follow the changes and print the inbox again")
    conversation = _command(commands, "conversation", cmd_conversation, "a conversation's transcript, notes marked",
                            "parley conversation 0b6f7d8e")
    conversation.add_argument("id", help="the conversation's id, or its beginning")
    conversation.add_argument("--limit", type=int, default=100)
    for name, func, what in (("reply", cmd_reply, "send a reply to the customer"),
                             ("note", cmd_note, "add a note only operators see")):
        command = _command(commands, name, func, what, f"echo 'Thanks!' | parley {name} CONVERSATION_ID -")
        command.add_argument("id")
        command.add_argument("text", nargs="?", help="the text, or - to read it from stdin (optional with --attach)")
        command.add_argument("--attach", action="append", metavar="FILE",
                             help="a file to send with it (again for several)")
    for name, func, what in (("resolve", cmd_resolve, "mark a conversation resolved"),
                             ("reopen", cmd_reopen, "open a resolved conversation again")):
        _command(commands, name, func, what, f"parley {name} CONVERSATION_ID").add_argument("id")
    assign = _command(commands, "assign", cmd_assign, "assign a conversation to an operator or a team, or unassign it",
                      "parley assign 0b6f7d8e bo@example.com --team Billing")
    assign.add_argument("id", help="the conversation's id, or its beginning")
    assign.add_argument("operator", nargs="?", default="me", help="me (default), an e-mail address or an operator id")
    assign.add_argument("--team", help="also assign it to this team (name or id)")
    assign.add_argument("--unassign", action="store_true", help="take the operator and the team off it")

    search = _command(docs, "search", cmd_docs_search, "search the published help documents",
                      "parley docs search 'reset my password'")
    search.add_argument("query")
    search.add_argument("--website", help="only this website's documents (name or id)")
    search.add_argument("--limit", type=int, default=10)
    webhooks = commands.add_parser("webhooks", help="webhook subscriptions").add_subparsers(dest="action",
                                                                                           required=True)
    deliveries = _command(webhooks, "deliveries", cmd_webhook_deliveries, "a subscription's recent deliveries",
                          "parley webhooks deliveries SUBSCRIPTION_ID --status failed")
    deliveries.add_argument("id")
    deliveries.add_argument("--status")
    deliveries.add_argument("--limit", type=int)
    operators = commands.add_parser("operators", help="the organization's operators").add_subparsers(
        dest="action", required=True)
    invite = _command(operators, "invite", cmd_operators_invite, "invite an operator: prints the link to hand over",
                      "parley operators invite bo@example.com --role agent")
    invite.add_argument("email")
    invite.add_argument("--role", choices=["agent", "admin", "owner"], default="agent",
                        help="the role in the organization (default: %(default)s; owner: owners only)")
    tail = _command(events, "tail", cmd_events_tail, "follow the organization's events as they commit",
                    "parley events tail --types MessageCreated")
    tail.add_argument("--after", help="start after this position instead of now")
    tail.add_argument("--types", help="comma-separated event types")
