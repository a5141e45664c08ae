"""The suite's fixtures; what they build is in tests/support/servers.py."""

from __future__ import annotations

import os
from typing import Iterator

import httpx
import pytest

from parley.embedded import EmbeddedNats, EmbeddedPostgres
from tests.support.oidc import OidcProvider
from tests.support.servers import Infra, Server, Tenant, from_containers, make_server, make_tenant
from tests.support.smtp import SmtpInbox, mail_env


@pytest.fixture(scope="session")
def infra(tmp_path_factory) -> Iterator[Infra]:
    if os.environ.get("PARLEY_DATABASE_URL") and os.environ.get("PARLEY_NATS_URL"):
        yield Infra(os.environ["PARLEY_DATABASE_URL"], os.environ["PARLEY_NATS_URL"])
        return
    if os.environ.get("PARLEY_TEST_CONTAINERS") == "1":
        yield from from_containers()
        return
    root = tmp_path_factory.mktemp("infra")
    postgres, nats_server = EmbeddedPostgres(root / "postgres", durable=False), EmbeddedNats(root / "nats")
    postgres.start()
    nats_server.start()
    try:
        yield Infra(postgres.url, nats_server.url)
    finally:
        nats_server.stop()
        postgres.stop()


@pytest.fixture(scope="session")
def server(infra, tmp_path_factory) -> Iterator[Server]:
    running = make_server(infra, tmp_path_factory.mktemp("server")).start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def http(server) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


@pytest.fixture
def tenant(server) -> Tenant:
    return make_tenant(server)


@pytest.fixture
def other_tenant(server) -> Tenant:
    return make_tenant(server)


@pytest.fixture(scope="module")
def quick_away_server(infra, tmp_path_factory) -> Iterator[Server]:
    """A server whose operators who chose `online` read as `away` 2 s after their last activity."""
    running = make_server(infra, tmp_path_factory.mktemp("away"), PARLEY_OPERATOR_AWAY_AFTER_SECONDS="2").start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def short_edit_window_server(infra, tmp_path_factory) -> Iterator[Server]:
    """A server whose operators may change their own messages for 2 s after sending them."""
    running = make_server(infra, tmp_path_factory.mktemp("edit-window"),
                          PARLEY_MESSAGE_EDIT_WINDOW_SECONDS="2").start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def sso_server(infra, tmp_path_factory) -> Iterator[Server]:
    # the provider listens on loopback, which the SSRF guard refuses unless told otherwise
    running = make_server(infra, tmp_path_factory.mktemp("sso"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def provider(sso_server) -> Iterator[OidcProvider]:
    """A real OpenID provider (oidc-provider, run by Node) whose client redirects to `sso_server`."""
    started = OidcProvider(sso_server.base_url + "/api/sso/callback").start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def smtp_inbox() -> Iterator[SmtpInbox]:
    """A real SMTP server on the loopback that keeps what it is sent."""
    with SmtpInbox() as inbox:
        yield inbox


@pytest.fixture(scope="module")
def mail_server(infra, tmp_path_factory, smtp_inbox) -> Iterator[Server]:
    """A server that mails `smtp_inbox` and takes replies on its own SMTP listener."""
    running = make_server(infra, tmp_path_factory.mktemp("mail"), **mail_env(smtp_inbox)).start()
    yield running
    running.stop()
