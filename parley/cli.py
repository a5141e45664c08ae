"""The `parley` command: serve, administration, and projection maintenance."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import msgspec
import psycopg
import uvicorn
import uvloop

from commands import admin, agent, team
from commands.deciders.operator import ROLES
from commands.errors import CommandError
from events import origin
from events.sealing import Sealer, check_key
from events.store import EventStore
from events.types import Origin
from parley import remote
from parley.client import Refused, progress
from parley.httpserver import CoalescingHttpToolsProtocol
from events.ids import parse_id
from parley.runtime import (Infrastructure, Runtime, prepare_loop, running_data_dir, running_server, search_config,
                            secrets_sealer)
from parley.settings import DEFAULT_DATA_DIR, Settings, load_settings
from parley.workers_process import WorkersProcess
from projections.views.operators import member_ids
from projections.runner import SchemaRefused, catch_up_if_idle, current_position, rebuild, rebuild_as_of
from projections.search import IndexBusy, warm_up

log = logging.getLogger("parley")


class _Server(uvicorn.Server):
    """Uvicorn re-raises the signal it caught once it stops, which would kill us before the embedded
    servers are stopped; we handle the signals ourselves instead."""

    def capture_signals(self):  # type: ignore[override]
        import contextlib

        return contextlib.nullcontext()


# SIGTERM to exit: whatever is still running then (a request, a stuck connection, a server that ignores
# its signal) is killed, so the service always stops within 10 s and leaves no process behind.
SHUTDOWN_SECONDS = 9.0
GRACEFUL_SECONDS = 3  # how long in-flight requests may finish once the server stops accepting


def _stop_by_deadline(infra: Infrastructure, workers_process: WorkersProcess | None) -> None:
    def overran() -> None:
        log.error("stopping overran %s s; killing what is left", SHUTDOWN_SECONDS)
        if workers_process:
            workers_process.kill()
        infra.kill()
        os._exit(1)

    timer = threading.Timer(SHUTDOWN_SECONDS, overran)
    timer.daemon = True
    timer.start()


async def _serve(settings: Settings, infra: Infrastructure) -> None:
    runtime = Runtime(settings, infra.database_url, infra.nats_url)
    stop = prepare_loop(signal.SIGINT, signal.SIGTERM)
    # finishes only when an embedded server cannot be brought back: then the service exits non-zero
    lost = asyncio.create_task(infra.supervise(), name="embedded-servers")
    ending = [lost, asyncio.create_task(stop.wait(), name="stop-signal")]
    workers_process = None
    try:
        if settings.role == "all" and settings.workers_process:
            workers_process = WorkersProcess(settings, infra.database_url, infra.nats_url)
            workers_process.start()
        elif settings.role in ("workers", "all"):
            await runtime.start_workers()
        if settings.role in ("api", "all"):
            app = await runtime.create_app()
            if workers_process:
                await workers_process.ready()
                runtime.tasks.append(asyncio.create_task(workers_process.supervise(), name="workers-process"))
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Accepted connections inherit this; without it, Nagle's algorithm meets delayed ACKs
            # and every keep-alive response waits ~40 ms.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((settings.host, settings.port))
            base_url = f"http://{settings.host}:{sock.getsockname()[1]}"
            runtime.services.base_url = base_url
            # proxy_headers off: uvicorn would believe X-Forwarded-For from 127.0.0.1; PARLEY_TRUSTED_PROXIES decides
            server = _Server(uvicorn.Config(app, lifespan="on", access_log=False, proxy_headers=False,
                                            http=CoalescingHttpToolsProtocol, log_level=settings.log_level.lower(),
                                            timeout_keep_alive=settings.keep_alive_seconds,
                                            timeout_graceful_shutdown=GRACEFUL_SECONDS))
            serving = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started and not serving.done():
                await asyncio.sleep(0.01)
            infra.publish(base_url)
            print(f"Parley {settings.role} listening on {base_url}", flush=True)
            warm_up(search_config(settings))  # a search embeds its query here: /readyz says when it can
            if runtime.services.setup_code:
                print(f"No operator yet: create the first owner at {base_url}/app/ (on another machine, "
                      f"with the setup code {runtime.services.setup_code})", flush=True)
            await asyncio.wait([serving, *ending], return_when=asyncio.FIRST_COMPLETED)
            _stop_by_deadline(infra, workers_process)
            for callback in runtime.on_stop_serving:
                callback()
            server.should_exit = True
            await serving
        else:
            infra.publish("")
            print("Parley workers running", flush=True)
            await asyncio.wait(ending, return_when=asyncio.FIRST_COMPLETED)
            _stop_by_deadline(infra, workers_process)
    finally:
        for task in ending:
            task.cancel()
        await asyncio.gather(*ending, return_exceptions=True)
        await asyncio.gather(*([asyncio.to_thread(workers_process.stop)] if workers_process else []), runtime.stop())
    if not lost.cancelled() and lost.exception() is not None:
        raise SystemExit(f"parley: {lost.exception()}")


def cmd_serve(args: argparse.Namespace) -> None:
    settings = _settings(args, host=args.host, port=args.port, role=args.role)
    infra = Infrastructure(settings).start(reuse_running=False)
    try:
        # uvloop: the event loop's own work (socket readiness, callbacks) is a large share of each request
        uvloop.run(_serve(settings, infra))
    finally:
        infra.stop()


def _settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    settings = load_settings(data_dir=getattr(args, "data_dir", None), **overrides)
    logging.basicConfig(level=settings.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return settings


async def _make_usable(store: EventStore, position: int, timeout: float = 30.0) -> None:
    """Returns once the core read model holds `position`: by catching it up here when no worker runs,
    or by waiting for the worker that does."""
    from projections.core import CoreProjection

    projection = CoreProjection()
    if await catch_up_if_idle(store.database_url, projection, store):
        return
    deadline = time.monotonic() + timeout
    async with await psycopg.AsyncConnection.connect(store.database_url, autocommit=True) as conn:
        while await current_position(conn, projection.name) < position:
            if time.monotonic() > deadline:
                raise SystemExit("the running server did not apply the change in time")
            await asyncio.sleep(0.02)


def _running_settings(settings: Settings) -> Settings:
    """With the default data directory and no server running there, the nearest running one above the
    current folder."""
    if settings.data_dir == DEFAULT_DATA_DIR and not running_server(settings.data_dir):
        return msgspec.structs.replace(settings, data_dir=running_data_dir(Path.cwd()) or settings.data_dir)
    return settings


@contextmanager
def _store_session(settings: Settings) -> Iterator[tuple[Infrastructure, EventStore]]:
    """The store of the data directory's running server (`_running_settings`), or of servers started for
    this command; a refused command prints its reason as JSON and exits with 2."""
    infra = Infrastructure(_running_settings(settings)).start(reuse_running=True)
    store = EventStore(infra.database_url, pool_size=1)
    try:
        yield infra, store
    except CommandError as exc:
        print(json.dumps({"error": exc.detail, "field": exc.field}), file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        store.close()
        infra.stop()


def _role_in(store: EventStore, org_id, role: str | None) -> str:
    """The role given, else the organization's default one: owner for its first operator, agent after."""
    if role is not None:
        return role

    async def members() -> list:
        await _make_usable(store, store.org_position(org_id))
        async with await psycopg.AsyncConnection.connect(store.database_url, autocommit=True) as conn:
            return await member_ids(conn, org_id)
    return team.load_team(store, org_id, asyncio.run(members())).default_role()


def _admin(args: argparse.Namespace, command: Callable[[EventStore], tuple[dict, int]]) -> None:
    origin.acting(Origin("cli"))  # the server's shell: whoever has it, from the machine itself
    with _store_session(_settings(args)) as (infra, store):
        result, position = command(store)
        asyncio.run(_make_usable(store, position))
    print(json.dumps(result))


def _sealer(args: argparse.Namespace, store: EventStore) -> Sealer:
    """What seals the secrets a command stores: the key of the server's processes, refused (`WrongKey`) when
    it is not the one this database's secrets are sealed with. The data directory's key is the one of the
    server `_store_session` found."""
    sealer = secrets_sealer(_running_settings(_settings(args)))
    check_key(store.database_url, sealer)
    return sealer


def _required_id(value: str, flag: str):
    parsed = parse_id(value)
    if parsed is None:
        print(json.dumps({"error": f"{flag} is not a valid id", "field": flag}), file=sys.stderr)
        raise SystemExit(2)
    return parsed


RATE = re.compile(r"^(\d+)(?:/min)?$")


def _rate(value: str | None) -> int | None:
    if value is None:
        return None
    match = RATE.match(value)
    if not match:
        raise argparse.ArgumentTypeError("rate must look like 120/min")
    return int(match.group(1))


def cmd_admin(args: argparse.Namespace) -> None:
    target = (args.entity, args.action)
    if target == ("org", "create"):
        def run(store):
            created = admin.create_org(store, args.name)
            return {"id": str(created.id)}, created.position
    elif target == ("website", "create"):
        org = _required_id(args.org, "--org")

        def run(store):
            created, identity_secret = admin.create_website(store, _sealer(args, store), org, args.name,
                                                            args.brand_color)
            return {"id": str(created.id), "websiteName": args.name, "identitySecret": identity_secret}, created.position
    elif target == ("website", "agent"):
        website = _required_id(args.website, "--website")
        allow_private = _settings(args).webhook_allow_private

        def run(store):
            body = agent.settings_of({"url": args.url, "enabled": not args.disabled, "greeting": args.greeting,
                                      "fallbackMessage": args.fallback_message})
            created, secret = agent.configure(store, _sealer(args, store), agent.website_org(store, website), website,
                                              body, allow_private)
            shown = {"websiteId": str(website), "url": body.url, "enabled": body.enabled}
            return ({**shown, "secret": secret} if secret else shown), created.position
    elif target == ("operator", "create"):
        org = _required_id(args.org, "--org")

        def run(store):
            role = _role_in(store, org, args.role)
            created, token = admin.create_operator(store, org, args.email, args.password, role, args.display_name)
            return {"id": str(created.id), "token": token, "role": role}, created.position
    elif target in (("operator", "add-org"), ("operator", "remove-org")):
        org = _required_id(args.org, "--org")

        def run(store):
            if args.action == "remove-org":
                created = admin.remove_operator_org(store, args.email, org)
                return {"id": str(created.id), "org": str(org), "member": False}, created.position
            role = _role_in(store, org, args.role)
            created = admin.add_operator_org(store, args.email, org, role)
            return {"id": str(created.id), "org": str(org), "member": True, "role": role}, created.position
    elif target == ("operator", "revoke-sessions"):
        def run(store):
            created = admin.revoke_operator_sessions(store, args.email)
            return {"id": str(created.id), "sessionsRevoked": True}, created.position
    elif target == ("oauth", "rotate-key"):
        from mcp_server.keys import rotate_signing_key

        with _store_session(_settings(args)) as (infra, _):
            print(json.dumps({"kid": rotate_signing_key(infra.database_url)}))
        return
    elif target == ("apikey", "create"):
        org = _required_id(args.org, "--org")
        website = _required_id(args.website, "--website") if args.website else None
        scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]

        def run(store):
            created, secret = admin.create_api_key(store, org, scopes, website, args.rate)
            return {"id": str(created.id), "secret": secret}, created.position
    else:
        key = _required_id(args.id, "--id")

        def run(store):
            created = admin.revoke_api_key(store, key)
            return {"id": str(created.id), "revoked": True}, created.position
    _admin(args, run)


def cmd_projections(args: argparse.Namespace) -> None:
    from parley.runtime import PROJECTIONS

    settings = _settings(args)
    names = [args.name] if args.name else list(PROJECTIONS)
    unknown = [n for n in names if n not in PROJECTIONS]
    if unknown:
        raise SystemExit(f"unknown projection {unknown[0]!r}; known: {', '.join(PROJECTIONS)}")
    if (args.until is None) != (args.schema is None):
        raise SystemExit("--until and --schema go together: a past position is rebuilt into a schema of its own")
    if args.schema is not None:
        _rebuild_as_of(settings, args, PROJECTIONS)
        return
    with _store_session(settings) as (infra, store):
        try:
            result = {name: asyncio.run(rebuild(infra.database_url, PROJECTIONS[name](settings), store))
                      for name in names}
        except IndexBusy as exc:
            raise SystemExit(str(exc)) from None
    print(json.dumps({"rebuilt": result}))


def _rebuild_as_of(settings: Settings, args: argparse.Namespace, projections: dict) -> None:
    """`projections rebuild NAME --until POSITION --schema NAME`: the live read model is untouched."""
    if args.name is None or args.name == "search":
        raise SystemExit("name one PostgreSQL read model to rebuild as of a position (search is a vector index)")
    with _store_session(settings) as (infra, store):
        try:
            position = asyncio.run(rebuild_as_of(infra.database_url, projections[args.name](settings), store,
                                                 args.until, args.schema))
        except SchemaRefused as exc:
            raise SystemExit(str(exc)) from None
    print(json.dumps({"rebuilt": {args.name: position}, "schema": args.schema}))


def cmd_events_export(args: argparse.Namespace) -> None:
    """Writes an organization's history into a folder for DuckDB (docs/history.md)."""
    import msgspec

    from events.export import export
    from projections.views.history_query import history_filter

    settings = _settings(args)
    org = _required_id(args.org, "--org")
    options = {"after": args.after, "since": args.since, "until": args.until, "types": args.types}
    with _store_session(settings) as (infra, _):
        flt = history_filter(org, {name: value for name, value in options.items() if value})
        shown = sys.stderr.isatty()
        with psycopg.connect(infra.database_url, autocommit=True) as conn:
            manifest = export(conn, flt, args.out, args.format,
                              progress=(lambda done, total: progress(done, total, "positions")) if shown else None)
        if shown:
            print(file=sys.stderr)
    print(msgspec.json.encode(manifest).decode())


def cmd_pets_validate(args: argparse.Namespace) -> None:
    """Names each broken rule on a line of its own; exits 0 only when every rule holds."""
    from commands.pets import validate

    failures = validate(args.path)
    for failure in failures:
        print(failure)
    if failures:
        sys.exit(1)
    print(f"{args.path}: a valid pet (spriteVersionNumber 2)")


def _imports_here(args: argparse.Namespace) -> bool:
    """`docs import` writes to this machine's data directory when it names one (`--data-dir`, or the
    server's own configuration in the environment); otherwise it goes over HTTP with a stored login."""
    if args.data_dir and args.profile:
        raise remote.Usage("--data-dir imports on this machine, --profile over HTTP: give one of them")
    return bool(args.data_dir) or (args.profile is None and any(
        os.environ.get(name) for name in ("PARLEY_DATA_DIR", "PARLEY_DATABASE_URL")))


def cmd_docs_import(args: argparse.Namespace) -> None:
    """Imports a folder of Markdown files: title from the first heading, category from the sub-folder."""
    from commands.documents import import_document, import_each, read_folder

    if not args.dir.is_dir():
        raise remote.Usage(f"{args.dir} is not a directory")
    here = _imports_here(args)
    files = read_folder(args.dir, args.locale, args.publish)
    if here:
        settings = _settings(args)
        website = _required_id(args.website, "--website")
        with _store_session(settings) as (_, store):
            outcomes = import_each(
                files, lambda source, fields: import_document(store, website, source, fields).outcome, progress)
    else:
        outcomes = remote.import_documents(args, files, progress)
    if files:
        print(file=sys.stderr)
    print(json.dumps({"files": len(files), "created": outcomes["created"], "updated": outcomes["updated"],
                      "unchanged": outcomes["unchanged"]}))


def cmd_completion(args: argparse.Namespace) -> None:
    from parley.completion import script

    print(script(parser(), args.shell), end="")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="parley", description="Parley customer-support workspace")
    commands = root.add_subparsers(dest="command", required=True)
    command = remote.subcommand

    def with_data_dir(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--data-dir", type=Path, help="data directory (default ./.parley or PARLEY_DATA_DIR)")
        return p

    serve = with_data_dir(command(commands, "serve", "run the API and the workers", "parley serve --port 8000"))
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--role", choices=["api", "workers", "all"])
    serve.set_defaults(func=cmd_serve)

    admin_parser = commands.add_parser("admin", help="administration, on the server's machine").add_subparsers(
        dest="entity", required=True)
    org = admin_parser.add_parser("org", help="organizations").add_subparsers(dest="action", required=True)
    with_data_dir(command(org, "create", "create an organization", "parley admin org create --name Acme")
                  ).add_argument("--name", required=True)
    website_actions = admin_parser.add_parser("website", help="websites").add_subparsers(dest="action",
                                                                                         required=True)
    website = with_data_dir(command(website_actions, "create", "create a website; prints its identity secret",
                                    "parley admin website create --org ORG_ID --name acme-help"))
    website.add_argument("--org", required=True)
    website.add_argument("--name", required=True)
    website.add_argument("--brand-color")
    website_agent = with_data_dir(command(
        website_actions, "agent", "configure the website's AI agent (AG-UI); prints the bearer secret when first "
        "configured", "parley admin website agent --website WEBSITE_ID --url https://agent.example.com/agui"))
    website_agent.add_argument("--website", required=True, help="the website's id")
    website_agent.add_argument("--url", required=True, help="the agent's AG-UI endpoint (https)")
    website_agent.add_argument("--disabled", action="store_true", help="configure it switched off")
    website_agent.add_argument("--greeting")
    website_agent.add_argument("--fallback-message")
    operator_actions = admin_parser.add_parser("operator", help="operators").add_subparsers(dest="action",
                                                                                            required=True)
    operator = with_data_dir(command(operator_actions, "create", "create an operator; prints a token",
                                     "parley admin operator create --org ORG_ID --email me@acme.io --password '…'"))
    operator.add_argument("--org", required=True)
    operator.add_argument("--email", required=True)
    operator.add_argument("--password", required=True)
    operator.add_argument("--display-name", help="the name visitors and the team see")
    role_help = "owner, admin or agent (default: owner for the organization's first operator, agent after)"
    operator.add_argument("--role", choices=ROLES, help=role_help)
    for action, what in (("add-org", "the operator also belongs to the organization"),
                         ("remove-org", "ends a membership added with add-org")):
        membership = with_data_dir(command(operator_actions, action, what,
                                           f"parley admin operator {action} --email me@acme.io --org ORG_ID"))
        membership.add_argument("--email", required=True)
        membership.add_argument("--org", required=True)
        if action == "add-org":
            membership.add_argument("--role", choices=ROLES, help=role_help)
    with_data_dir(command(operator_actions, "revoke-sessions",
                          "ends every session of the operator, MCP connections included",
                          "parley admin operator revoke-sessions --email me@acme.io")
                  ).add_argument("--email", required=True)
    oauth = admin_parser.add_parser("oauth", help="the MCP authorization server").add_subparsers(
        dest="action", required=True)
    with_data_dir(command(oauth, "rotate-key", "signs new MCP access tokens with a new key; the old one verifies "
                          "until its tokens expire", "parley admin oauth rotate-key"))
    apikey = admin_parser.add_parser("apikey", help="API keys").add_subparsers(dest="action", required=True)
    create_key = with_data_dir(command(apikey, "create", "create an API key; prints its secret",
                                       "parley admin apikey create --org ORG_ID --scopes messages:read --rate 600/min"))
    create_key.add_argument("--org", required=True)
    create_key.add_argument("--scopes", required=True)
    create_key.add_argument("--website")
    create_key.add_argument("--rate", type=_rate, help="requests per minute, e.g. 120/min")
    with_data_dir(command(apikey, "revoke", "revoke an API key", "parley admin apikey revoke --id KEY_ID")
                  ).add_argument("--id", required=True)
    commands.choices["admin"].set_defaults(func=cmd_admin)

    projections = commands.add_parser("projections", help="read-model maintenance").add_subparsers(
        dest="action", required=True)
    rebuild_parser = with_data_dir(command(projections, "rebuild", "drop and rebuild read models",
                                           "parley projections rebuild core"))
    rebuild_parser.add_argument("name", nargs="?")
    rebuild_parser.add_argument("--until", type=int, help="rebuild as of this position (with --schema)")
    rebuild_parser.add_argument("--schema", help="into this schema of its own, for an analyst's questions "
                                "(the live read model untouched)")
    rebuild_parser.set_defaults(func=cmd_projections)

    events = commands.add_parser("events", help="the event history").add_subparsers(dest="action", required=True)
    events_export = with_data_dir(command(
        events, "export", "export an organization's events: one Parquet file per type, or JSON Lines",
        "parley events export --org ORG_ID --out ./history --since 2026-01-01T00:00:00Z"))
    events_export.add_argument("--org", required=True, help="the organization's id")
    events_export.add_argument("--out", type=Path, required=True, help="the folder to write into")
    events_export.add_argument("--format", choices=["parquet", "jsonl"], default="parquet")
    events_export.add_argument("--after", help="only events past this position")
    events_export.add_argument("--since", help="only events at or after this time (RFC 3339)")
    events_export.add_argument("--until", help="only events up to this position or time")
    events_export.add_argument("--types", help="comma-separated event types")
    events_export.set_defaults(func=cmd_events_export)

    docs = commands.add_parser("docs", help="help documents").add_subparsers(dest="action", required=True)
    docs_import = with_data_dir(command(
        docs, "import", "import a folder of Markdown files over HTTP with the stored login, or into --data-dir "
        "(idempotent: a file is found again by its path; unchanged files change nothing)",
        "parley docs import ./help --website acme-help --publish"))
    docs_import.add_argument("dir", type=Path)
    docs_import.add_argument("--website", required=True, help="the website's id (over HTTP: its name or id)")
    docs_import.add_argument("--locale", default="en")
    docs_import.add_argument("--publish", action="store_true", help="publish the documents (default: drafts)")
    docs_import.add_argument("--profile", help=f"the stored login to use (default: {remote.DEFAULT_PROFILE})")
    docs_import.set_defaults(func=cmd_docs_import)
    pets = commands.add_parser("pets", help="mascot artwork").add_subparsers(dest="action", required=True)
    pets_validate = command(pets, "validate", "check a pet atlas (and its pet.json) against every rule",
                            "parley pets validate web/pets/default/pet.json")
    pets_validate.add_argument("path", type=Path, help="a pet.json, or the atlas itself (PNG or WebP)")
    pets_validate.set_defaults(func=cmd_pets_validate)
    completion = command(commands, "completion", "print the shell completion script for bash or zsh",
                         "parley completion bash > ~/.local/share/bash-completion/completions/parley")
    completion.add_argument("shell", choices=["bash", "zsh"])
    completion.set_defaults(func=cmd_completion)
    remote.add_commands(commands, events, docs)
    return root


def main(argv: list[str] | None = None) -> None:
    root = parser()
    args = root.parse_args(argv)
    try:
        args.func(args)
    except remote.Usage as usage:
        root.exit(2, f"parley: {usage}\n")
    except Refused as refused:
        root.exit(1, f"parley: {refused}\n")
    except KeyboardInterrupt:
        root.exit(130)


if __name__ == "__main__":
    main()
