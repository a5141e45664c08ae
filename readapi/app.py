"""The Litestar application: every REST route of the contract, wrapped by the contract's rules."""

from __future__ import annotations

from typing import Sequence

from litestar import Litestar
from litestar.handlers import HTTPRouteHandler

from readapi.auth import DEPENDENCIES
from readapi.deprecation import check_notice
from readapi.middleware import ContractMiddleware
from readapi.mounted import MountedApp
from readapi.problems import EXCEPTION_HANDLERS
from readapi.routes import (accounts, agent, assignment, attachments, audit, avatars, batch, campaigns,
                            canned_responses, chat, conversation_flags, conversation_history, conversation_search,
                            docs, documents, events, health, hours, mail, message_changes, message_feedback,
                            notifications, operators, pets, realtime, reports, resources, sandbox, sso, team,
                            two_factor, web_files, webhooks, widget, workflow, workspace)
from readapi.services import Services

ROUTE_MODULES = [resources, operators, batch, documents, sandbox, chat, message_feedback, message_changes,
                 conversation_flags, realtime, webhooks, workspace, reports, events, conversation_history, campaigns,
                 web_files, docs, health, agent, pets, team, audit, sso, accounts, avatars, two_factor, mail,
                 attachments, conversation_search, canned_responses, workflow, assignment, notifications, hours, widget]


def create_app(services: Services, mounted: MountedApp | None = None,
               extra_routes: Sequence[HTTPRouteHandler] = ()) -> ContractMiddleware:
    """The API, with `mounted` (the MCP server) answering its own paths; `extra_routes` lets tests mount
    routes of their own (a deprecated one, for instance)."""
    handlers = [*(handler for module in ROUTE_MODULES for handler in module.ROUTES), *extra_routes]
    check_notice(handlers)
    app = Litestar(
        route_handlers=handlers,
        exception_handlers=EXCEPTION_HANDLERS,
        # each route's description (readapi/openapi.py) says who may call it, and gives it the guard that checks
        # it, and what body it takes
        dependencies=DEPENDENCIES,
        openapi_config=None,  # readapi/openapi.py writes the document, readapi/routes/docs.py serves it
        request_max_body_size=services.settings.max_body_bytes,
        debug=False,
        # the MCP SDK's session manager runs as long as the application
        lifespan=[lambda _: mounted.lifespan()] if mounted else [],
    )
    app.state.services = services
    return ContractMiddleware(app, services, mounted)
