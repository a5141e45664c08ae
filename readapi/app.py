"""The Litestar application: every REST route of the contract, wrapped by the contract's rules."""

from __future__ import annotations

from typing import Sequence

from litestar import Litestar
from litestar.handlers import HTTPRouteHandler

from mcp_server.service import McpService
from readapi.deprecation import check_notice
from readapi.middleware import ContractMiddleware
from readapi.problems import EXCEPTION_HANDLERS
from readapi.routes import (agent, batch, campaigns, chat, conversation_flags, conversation_history, docs, documents,
                            events, health, message_feedback, operators, pets, realtime, reports, resources, sandbox,
                            web_files, webhooks, workspace)
from readapi.services import Services

ROUTE_MODULES = [resources, operators, batch, documents, sandbox, chat, message_feedback, conversation_flags,
                 realtime, webhooks, workspace, reports, events, conversation_history, campaigns, web_files, docs,
                 health, agent, pets]


def create_app(services: Services, extra_routes: Sequence[HTTPRouteHandler] = ()) -> ContractMiddleware:
    """The API; `extra_routes` lets tests mount routes of their own (a deprecated one, for instance)."""
    handlers = [*(handler for module in ROUTE_MODULES for handler in module.ROUTES), *extra_routes]
    check_notice(handlers)
    mcp = McpService(services)
    app = Litestar(
        route_handlers=handlers,
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=None,  # readapi/openapi.py writes the document, readapi/routes/docs.py serves it
        request_max_body_size=services.settings.max_body_bytes,
        debug=False,
        lifespan=[lambda _: mcp.lifespan()],  # the SDK's session manager runs as long as the application
    )
    app.state.services = services
    return ContractMiddleware(app, services, mcp)
