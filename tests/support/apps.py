"""The application as `parley serve` builds it, without servers: enough to read its routes and answer
requests refused before anything is read (a missing credential)."""

from __future__ import annotations

from litestar import Litestar

from parley.runtime import attachment_settings, search_config
from parley.settings import Settings, narrowed
from readapi.app import create_app
from readapi.services import ApiSettings, Services


def bare_app() -> Litestar:
    """The Litestar app itself, without the contract middleware (whose rate limiter needs PostgreSQL)."""
    settings = Settings()
    services = Services(narrowed(settings, ApiSettings, search=search_config(settings)), store=None,  # type: ignore[arg-type]
                        pool=None, watch=None, sealer=None, blobs=None,  # type: ignore[arg-type]
                        attachments=attachment_settings(settings))
    return create_app(services).app
