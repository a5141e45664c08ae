"""The OpenAPI document: every route described, the document valid, served with /docs offline, and 401s
naming the schemes a route accepts."""

from __future__ import annotations

import msgspec
import pytest
from openapi_spec_validator import validate


from readapi.openapi import UNDOCUMENTED_KEY, build_document, documented_path, operation_of, route_handlers
from tests.support.apps import bare_app


@pytest.fixture(scope="module")
def app():
    """The application as `parley serve` builds it; building the document needs no database."""
    return bare_app()


@pytest.fixture(scope="module")
def document(app):
    return build_document(app)


def test_every_route_is_described(app, document):
    missing = [f"{sorted(handler.http_methods)} {path} ({handler.handler_name})"
               for path, handler in route_handlers(app)
               if operation_of(handler) is None and UNDOCUMENTED_KEY not in handler.opt]
    assert not missing, ("routes without @describe(...) (see readapi/openapi.py); describe them:\n"
                         + "\n".join(missing))
    for path, handler in route_handlers(app):
        if operation_of(handler) is not None:
            for method in handler.http_methods - {"HEAD", "OPTIONS"}:
                assert method.lower() in document["paths"][documented_path(path)], (method, path)


def test_the_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_links_lead_to_operations_that_exist(document):
    operations = {op["operationId"]: op for item in document["paths"].values() for op in item.values()}
    links = [(target, link) for op in operations.values() for answer in op["responses"].values()
             for target, link in answer.get("links", {}).items()]
    assert len(links) > 10
    for target, link in links:
        assert link["operationId"] in operations, target
        names = {p["name"] for p in operations[link["operationId"]]["parameters"] if "name" in p}
        assert {name.removeprefix("query.") for name in link.get("parameters", {})} <= names, target


def test_path_parameters_are_named_as_in_the_contract(document):
    assert "/api/conversations/{conversationId}" in document["paths"]
    assert "/api/websites/{websiteName}" in document["paths"]
    assert not [path for path in document["paths"] if "_" in path.replace("/api/", "")], \
        "a path parameter kept its snake_case name"


def test_operations_carry_bodies_parameters_errors_and_security(document):
    create = document["paths"]["/api/messages"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/MessageCreate"}
    assert create["requestBody"]["content"]["application/json"]["example"]["from"] == "operator"
    assert create["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Message"}
    assert {"400", "401", "403", "404", "429"} <= set(create["responses"])
    assert create["responses"]["401"]["content"]["application/problem+json"]["schema"] == {
        "$ref": "#/components/schemas/Problem"}
    assert "WWW-Authenticate" in create["responses"]["401"]["headers"]
    assert create["security"] == [{"operatorToken": []}, {"apiKey": []}]
    assert "messages:write" in create["description"]
    message = document["components"]["schemas"]["MessageCreate"]
    assert message["properties"]["content"]["maxLength"] > 0 and message["additionalProperties"] is False
    listing = {p["name"]: p for p in document["paths"]["/api/conversations"]["get"]["parameters"] if "name" in p}
    assert listing["inboxFilter"]["schema"]["enum"] and listing["limit"]["schema"]["minimum"] == 0
    assert listing["sortField"]["schema"]["enum"]
    assert {"$ref": "#/components/parameters/API-Version"} in document["paths"]["/api/conversations"]["get"]["parameters"]
    assert set(document["components"]["securitySchemes"]) == {"apiKey", "operatorToken", "chatSession"}
    assert document["paths"]["/api/chat/realtime"]["get"]["responses"]["200"]["content"].keys() == {"text/event-stream"}
    assert document["paths"]["/api/chat/sessions"]["post"]["security"] == []


def test_times_are_date_time_strings_and_webhook_events_an_enum(document):
    schemas = document["components"]["schemas"]
    assert schemas["Message"]["properties"]["creationTime"] == {"type": "string", "format": "date-time"}
    assert {"type": "string", "format": "date-time"} in schemas["Message"]["properties"]["ratingTime"]["anyOf"]
    assert schemas["WebhookSubscription"]["properties"]["createdAt"]["format"] == "date-time"
    untyped = [(name, field) for name, schema in schemas.items()
               for field, prop in schema.get("properties", {}).items()
               if field.endswith(("Time", "At")) and "date-time" not in str(prop)]
    assert not untyped, untyped
    events = schemas["WebhookCreate"]["properties"]["events"]["items"]
    assert events["enum"] == ["message.created", "conversation.created", "customer.created"]


def test_a_file_body_is_documented_with_its_media_types(document):
    validate_pet = document["paths"]["/api/pets/validate"]["post"]
    assert validate_pet["requestBody"]["content"] == {
        media_type: {"schema": {"type": "string", "format": "binary"}} for media_type in ("image/png", "image/webp")}
    assert validate_pet["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PetVerdict"}
    assert {"400", "401", "403", "413", "415"} <= set(validate_pet["responses"])
    assert "Parley-Position" not in validate_pet["responses"]["200"]["headers"]  # nothing is written
    assert validate_pet["security"] == [{"operatorToken": []}]


def test_the_live_server_serves_the_document_and_offline_docs(http, document):
    served = http.get("/schema/openapi.json")
    assert served.status_code == 200 and served.headers["content-type"].startswith("application/json")
    assert msgspec.json.decode(served.content) == msgspec.json.decode(msgspec.json.encode(document))
    page = http.get("/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/schema/openapi.json" in page.text and "http" not in page.text.replace('"/docs', "")
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js"):
        answer = http.get(f"/docs/assets/{asset}")
        assert answer.status_code == 200 and len(answer.content) > 1000
    assert http.get("/docs/assets/..%2Fswagger-initializer.js").status_code == 404
    assert http.get("/docs/assets/index.html").status_code == 404


@pytest.mark.parametrize(("path", "challenge"), [
    ("/api/customers", 'Token realm="parley", Basic realm="parley"'),
    ("/api/webhooksubscriptions", 'Token realm="parley"'),
    ("/api/chat/profile", 'ChatSession realm="parley"'),
])
def test_a_401_names_the_schemes_the_route_accepts(http, path, challenge):
    for headers in ({}, {"Authorization": "Token not-a-token"}):
        answer = http.get(path, headers=headers)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == challenge
        assert answer.headers["content-type"] == "application/problem+json"
