"""The OpenAPI document: every route described, the document valid, served with /docs offline, and 401s
naming the schemes a route accepts."""

from __future__ import annotations

import msgspec
import pytest
from openapi_spec_validator import validate


from commands.principal import ALL_SCOPES
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
    assert events["enum"] == ["message.created", "conversation.created", "customer.created", "conversation.assigned",
                              "conversation.resolved", "conversation.reopened", "conversation.labeled", "message.updated",
                              "message.deleted", "*"]
    # each event's payload in the document's webhooks section (docs/decisions.md: "*" and the empty list)
    assert sorted(document["webhooks"]) == sorted(events["enum"][:-1])
    assigned = document["webhooks"]["conversation.assigned"]["post"]["requestBody"]["content"]["application/json"]
    assert assigned["schema"]["properties"]["event"] == {"const": "conversation.assigned"}


def test_a_file_body_is_documented_with_its_media_types(document):
    validate_pet = document["paths"]["/api/pets/validate"]["post"]
    assert validate_pet["requestBody"]["content"] == {
        media_type: {"schema": {"type": "string", "format": "binary"}} for media_type in ("image/png", "image/webp")}
    assert validate_pet["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PetVerdict"}
    assert {"400", "401", "403", "413", "415"} <= set(validate_pet["responses"])
    assert "Parley-Position" not in validate_pet["responses"]["200"]["headers"]  # nothing is written
    assert validate_pet["security"] == [{"operatorToken": []}]


def test_the_live_server_serves_the_document_and_offline_docs(http, server, document):
    served = http.get("/schema/openapi.json")
    assert served.status_code == 200 and served.headers["content-type"].startswith("application/json")
    # the same document, but that a running server names where it is reached
    assert msgspec.json.decode(served.content) == msgspec.json.decode(msgspec.json.encode(
        {**document, "servers": [{"url": server.base_url, "description": "This Parley server."}]}))
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


def test_a_body_over_the_cap_is_the_documented_413(http, tenant, document):
    assert "413" in document["paths"]["/api/customers"]["post"]["responses"]
    key = tenant.key()
    too_large = b'{"nickname": "' + b"x" * 1_100_000 + b'"}'
    for path in ("/api/customers", "/api/messages"):  # a described body, and a hot write's
        answer = http.post(path, headers={**key, "content-type": "application/json"}, content=too_large)
        assert answer.status_code == 413, answer.text
        assert answer.headers["content-type"] == "application/problem+json" and answer.json()["status"] == 413
    assert http.get("/api/customers", headers=key).json() == []


def test_the_document_follows_the_contract(document):
    """The names, defaults and enums SPEC.md gives, where the document states them."""
    paths = document["paths"]
    assert "/api/webhooksubscriptions/{webhookSubscriptionId}" in paths
    assert not [path for path in paths if "{subscriptionId}" in path]
    for path in ("/api/conversations", "/api/messages", "/api/documents"):
        listing = {p["name"]: p["schema"] for p in paths[path]["get"]["parameters"] if "name" in p}
        assert listing["limit"]["default"] == listing["skip"]["default"] == 0, path
    created = paths["/api/messages"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    message = document["components"]["schemas"][created["$ref"].rsplit("/", 1)[1]]
    assert message["properties"]["from"]["enum"] == ["customer", "operator"]
    body_routes = [(method, path) for path, item in paths.items() for method, op in item.items() if "requestBody" in op]
    assert len(body_routes) > 30
    assert not [route for route in body_routes if "413" not in paths[route[1]][route[0]]["responses"]]


def test_the_document_states_the_limits_the_server_enforces(document):
    schemas = document["components"]["schemas"]
    reaction = schemas["Message"]["properties"]["reactions"]["items"]
    assert set(schemas[reaction["$ref"].rsplit("/", 1)[1]]["properties"]) == {"emoji", "from", "personId"}
    scopes = schemas["ApiKeyCreate"]["properties"]["scopes"]["items"]["enum"]
    assert set(scopes) == ALL_SCOPES and set(schemas["ApiKey"]["properties"]["scopes"]["items"]["enum"]) == ALL_SCOPES
    rate = schemas["ApiKeyCreate"]["properties"]["ratePerMinute"]["anyOf"][0]
    assert (rate["minimum"], rate["maximum"]) == (1, 1_000_000_000)
    for shape in ("WebsiteCreate", "WebsiteSettings", "Website"):
        assert schemas[shape]["properties"]["brandColor"]["anyOf"][0]["pattern"] == "^#[0-9a-fA-F]{6}$", shape
    times = {(path, p["name"]): p["schema"] for path in ("/api/audit", "/api/events", "/api/messages")
             for p in document["paths"][path]["get"]["parameters"] if p.get("name") in ("since", "until", "asOf")}
    assert len(times) == 5
    for where, schema in times.items():
        assert schema.get("format") == "date-time" or {"format": "date-time"} in schema.get("anyOf", []), where


def test_servers_tags_and_operation_ids_are_for_integrators(document):
    assert document["servers"] == [{"url": "/", "description": "This Parley server."}]  # the bare app: not bound
    assert all(tag.get("description") for tag in document["tags"])
    ids = {(method, path): op["operationId"] for path, item in document["paths"].items() for method, op in item.items()}
    assert ids[("get", "/api/documents")] == "listDocuments" and ids[("post", "/api/messages")] == "createMessage"
    assert ids[("get", "/api/conversations/{conversationId}")] == "getConversation"
    assert ids[("put", "/api/webhooksubscriptions/{webhookSubscriptionId}")] == "updateWebhookSubscription"
    assert ids[("get", "/api/sandbox/documents")] == "listSandboxDocuments"


def test_no_two_paths_match_one_url(document):
    """Where a literal segment of one path meets a parameter of another, the parameter is a UUID (which the
    literal never is): `/api/operators/invitations/{invitationId}` beside `/api/operators/{operatorId}/...`."""
    def parameter_schema(path: str, name: str) -> dict:
        item = document["paths"][path]
        return next(p["schema"] for op in item.values() for p in op["parameters"] if p.get("name") == name)

    paths = list(document["paths"])
    for n, first in enumerate(paths):
        for second in paths[n + 1:]:
            a, b = first.split("/"), second.split("/")
            if len(a) != len(b):
                continue
            clashes = []
            for x, y in zip(a, b):
                x_param, y_param = x.startswith("{"), y.startswith("{")
                if not x_param and not y_param and x != y:
                    break  # two different literals: never the same URL
                if x_param != y_param:
                    clashes.append((first, x[1:-1]) if x_param else (second, y[1:-1]))
            else:
                assert clashes and all(parameter_schema(path, name).get("format") == "uuid"
                                       for path, name in clashes), (first, second)
