"""The Litestar application: every REST route of the contract, wrapped by the contract's rules."""

from __future__ import annotations

from litestar import Litestar
from litestar.openapi import OpenAPIConfig

from readapi.middleware import ContractMiddleware
from readapi.problems import EXCEPTION_HANDLERS
from readapi.routes import documents, operators, resources
from readapi.services import Services

ROUTE_MODULES = [resources, operators, documents]


def create_app(services: Services) -> ContractMiddleware:
    app = Litestar(
        route_handlers=[handler for module in ROUTE_MODULES for handler in module.ROUTES],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=OpenAPIConfig(title="Parley", version="1", path="/schema"),
        request_max_body_size=services.settings.max_body_bytes,
        debug=False,
    )
    app.state.services = services
    return ContractMiddleware(app)
