"""Each route states who may call it and what body it takes once, in its description (readapi/openapi.py);
the guard it gives the route authenticates from it and handlers receive `principal` and `payload`. These checks need
no database: a request without a credential is refused before anything is read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from litestar.testing import TestClient

from readapi.auth import authenticated_as_described
from readapi.openapi import TAGS, RawBody, build_document, operation_of, route_handlers
from tests.support.apps import bare_app

ROUTES = Path(__file__).resolve().parents[2] / "readapi" / "routes"
# a verb and what it acts on, camelCase: listDocuments, createMessage, updateWebhookSubscription
OPERATION_ID = re.compile(r"^[a-z]+(?:[A-Z][a-z0-9]*)+$")


@pytest.fixture(scope="module")
def app():
    return bare_app()


def documented(app):
    for path, handler in route_handlers(app):
        if (operation := operation_of(handler)) is not None:
            for method in sorted(handler.http_methods - {"HEAD", "OPTIONS"}):
                yield path, method, handler, operation


def concrete(path: str) -> str:
    """A request path for a route path: an id where the route takes one, a name elsewhere."""
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: ("0b6f7d8e-2c4a-4f1e-8d3b-5a9c1e2f4d60"
                                                  if m.group(1).endswith("_id") else "name"), path)


def test_every_authenticated_route_refuses_a_request_without_a_credential(app):
    checked = 0
    with TestClient(app) as client:
        for path, method, _, operation in documented(app):
            if not operation.auth.accept:
                continue  # PUBLIC
            answer = client.request(method, concrete(path), content=b"{}",
                                    headers={"content-type": "application/json"})
            assert answer.status_code == 401, (method, path, answer.text)
            assert answer.headers["content-type"] == "application/problem+json", (method, path)
            assert answer.headers["www-authenticate"] == operation.auth.challenge(), (method, path)
            checked += 1
    assert checked > 70


def test_a_body_is_declared_as_its_description_states_it(app):
    for path, method, handler, operation in documented(app):
        parameters = handler.parsed_fn_signature.parameters
        if "payload" in parameters:
            declared = parameters["payload"].annotation
            expected = operation.body if operation.body_required else operation.body | None
            assert operation.body is not None and not isinstance(operation.body, RawBody), (method, path)
            assert declared == expected, (method, path, declared, expected)
        elif operation.body is not None and not isinstance(operation.body, RawBody):
            # a hot write decodes its described body itself (readapi/auth.py's with_principal)
            assert operation.auth.kept, f"{method} {path}: describes a body but declares no `payload`"


def test_every_route_that_takes_credentials_is_guarded_but_the_hot_writes(app):
    for path, method, handler, operation in documented(app):
        guarded = authenticated_as_described in (handler.guards or ())
        assert guarded == (bool(operation.auth.accept) and not operation.auth.kept), (method, path)
        assert guarded or not any(layer.guards for layer in handler.ownership_layers), (method, path)


def test_a_principal_is_declared_only_where_a_credential_is_required(app):
    for path, method, handler, operation in documented(app):
        if "principal" in handler.parsed_fn_signature.parameters:
            assert operation.auth.accept and not operation.auth.kept, (method, path)


def test_no_handler_states_its_credentials_or_body_again():
    for module in sorted(ROUTES.glob("*.py")):
        source = module.read_text()
        for restated in ("authenticate(", "decode_body(", "accept=(", "scope=\""):
            lines = [n for n, line in enumerate(source.splitlines(), 1)
                     if restated in line and "Auth(" not in line]
            assert not lines, f"{module.name}:{lines}: `{restated}` restates what the route's description says"


def test_hot_writes_are_the_handlers_that_authenticate_themselves(app):
    for path, method, handler, operation in documented(app):
        calls = "with_principal(" in Path(handler.fn.__code__.co_filename).read_text().split(
            f"def {handler.fn.__name__}(", 1)[1].split("\n\n\n", 1)[0]
        assert calls == operation.auth.kept, (method, path)


def test_every_operation_is_named_for_integrators_once(app):
    """Generated clients name their functions after operationIds: each route states its own
    (`operation_id=` in @describe), camelCase, unique, and links name their targets by it."""
    named: dict[str, str] = {}
    for path, method, handler, operation in documented(app):
        where = f"{method} {path} ({handler.fn.__module__}.{handler.fn.__name__})"
        assert OPERATION_ID.match(operation.operation_id), (
            f"{where}: operation_id={operation.operation_id!r}; give @describe a camelCase operation_id "
            "naming a verb and its resource, like listDocuments")
        assert operation.operation_id not in named, f"{where} and {named[operation.operation_id]}: same operationId"
        named[operation.operation_id] = where
    for path, method, _, operation in documented(app):
        unknown = set(operation.links) - set(named)
        assert not unknown, f"{method} {path}: links to {unknown}, which no operation is named"
    document = build_document(app)
    assert sorted(named) == sorted(op["operationId"] for item in document["paths"].values() for op in item.values())


def test_every_tag_is_described(app):
    used = {tag["name"] for tag in build_document(app)["tags"]}
    assert not used - set(TAGS), f"tags without a description in readapi/openapi.py TAGS: {sorted(used - set(TAGS))}"
