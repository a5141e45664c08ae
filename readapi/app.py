"""The Litestar application: every REST route of the contract, wrapped by the contract's rules."""

from __future__ import annotations

from typing import Sequence

from litestar import Litestar
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import OpenAPIConfig

from readapi.deprecation import check_notice
from readapi.middleware import ContractMiddleware
from readapi.problems import EXCEPTION_HANDLERS
from readapi.routes import (batch, chat, conversation_flags, documents, message_feedback, operators, realtime,
                            resources, sandbox, webhooks)
from readapi.services import Services

ROUTE_MODULES = [resources, operators, batch, documents, sandbox, chat, message_feedback, conversation_flags,
                 realtime, webhooks]


def create_app(services: Services, extra_routes: Sequence[HTTPRouteHandler] = ()) -> ContractMiddleware:
    """The API; `extra_routes` lets tests mount routes of their own (a deprecated one, for instance)."""
    handlers = [*(handler for module in ROUTE_MODULES for handler in module.ROUTES), *extra_routes]
    check_notice(handlers)
    app = Litestar(
        route_handlers=handlers,
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=OpenAPIConfig(title="Parley", version="1", path="/schema"),
        request_max_body_size=services.settings.max_body_bytes,
        debug=False,
    )
    app.state.services = services
    return ContractMiddleware(app, services)
