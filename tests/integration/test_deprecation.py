"""Deprecation signals, proven on a test-only route: the contract deprecates no operation today."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from litestar import Request, Response, get

from commands import admin
from commands.errors import NotFound
from tests.support.servers import basic
from tests.support.inprocess import InProcessApi
from readapi.auth import PUBLIC
from readapi.deprecation import DeprecationNoticeTooShort, deprecated
from readapi.openapi import describe
from readapi.services import json_response

LINK = "https://parley.dev/changelog#old-echo"


def old_echo_route(deprecation: date, sunset: date):
    @deprecated(deprecation=deprecation, sunset=sunset, link=LINK)
    @describe("An old echo", PUBLIC, answer=dict[str, bool], errors=(404,))
    @get("/api/test/old-echo")
    async def old_echo(request: Request) -> Response:
        if request.query_params.get("missing"):
            raise NotFound("nothing to echo")
        return json_response({"echo": True})
    return old_echo


@pytest.fixture(scope="module")
def api(infra):
    running = InProcessApi(infra.new_database(), infra.nats_url)
    yield running
    running.close()


@pytest.fixture(scope="module")
def app(api):
    return api.app_with([old_echo_route(date(2026, 1, 1), date(2026, 7, 1))])


def assert_deprecation_headers(response) -> None:
    assert response.headers["Deprecation"] == "@1767225600"  # 2026-01-01T00:00:00Z
    assert response.headers["Sunset"] == "Wed, 01 Jul 2026 00:00:00 GMT"
    assert response.headers["Link"] == f'<{LINK}>; rel="deprecation"'
    assert response.headers["API-Version"] == "1"
    assert response.headers["RateLimit"] and response.headers["RateLimit-Policy"]


def test_a_deprecated_route_answers_with_the_three_headers(api, app):
    response = api.request("GET", "/api/test/old-echo", app=app)
    assert response.status_code == 200 and response.json() == {"echo": True}
    assert_deprecation_headers(response)


def test_its_errors_carry_them_too(api, app):
    missing = api.request("GET", "/api/test/old-echo?missing=1", app=app)
    assert missing.status_code == 404
    assert missing.headers["Content-Type"] == "application/problem+json"
    assert_deprecation_headers(missing)
    wrong_method = api.request("POST", "/api/test/old-echo", app=app)
    assert wrong_method.status_code == 405


def test_refusals_before_routing_carry_them_too(api, app):
    refused = api.request("GET", "/api/test/old-echo", app=app, headers={"API-Version": "3"})
    assert refused.status_code == 400
    assert_deprecation_headers(refused)


def test_a_429_on_it_carries_them_too(api, app):
    org = admin.create_org(api.runtime.store, "Deprecations")
    key, secret = admin.create_api_key(api.runtime.store, org.id, ["websites:read"], None, 1)
    assert api.run(api.runtime.services.watch.wait_for(key.position))
    assert api.request("GET", "/api/test/old-echo", app=app, headers=basic(secret)).status_code == 200
    refused = api.request("GET", "/api/test/old-echo", app=app, headers=basic(secret))
    assert refused.status_code == 429 and refused.headers["Retry-After"]
    assert_deprecation_headers(refused)


def test_the_openapi_document_marks_it_deprecated(api, app):
    paths = api.request("GET", "/schema/openapi.json", app=app).json()["paths"]
    assert paths["/api/test/old-echo"]["get"]["deprecated"] is True
    assert {"Deprecation", "Sunset", "Link"} <= set(paths["/api/test/old-echo"]["get"]["responses"]["200"]["headers"])
    assert not paths["/api/sandbox/documents"]["get"].get("deprecated")


def test_current_routes_carry_none(api, app):
    response = api.request("GET", "/api/sandbox/documents", app=app)
    assert response.status_code == 200
    assert not {"deprecation", "sunset", "link"} & set(response.headers)


def test_a_sunset_less_than_180_days_after_deprecation_refuses_to_start(api):
    announced = date(2026, 1, 1)
    with pytest.raises(DeprecationNoticeTooShort, match="180 days"):
        api.app_with([old_echo_route(announced, announced + timedelta(days=179))])
    with pytest.raises(DeprecationNoticeTooShort):
        api.app_with([old_echo_route(announced, announced - timedelta(days=1))])
    exactly = api.app_with([old_echo_route(announced, announced + timedelta(days=180))])
    response = api.request("GET", "/api/test/old-echo", app=exactly)
    assert response.headers["Sunset"] == "Tue, 30 Jun 2026 00:00:00 GMT"
