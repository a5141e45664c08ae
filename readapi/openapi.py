"""The OpenAPI 3.1 document (`GET /schema/openapi.json`), written from each route's description and from
the same msgspec Structs the handlers decode and answer, so it cannot drift from the code.

## How to describe a route (every route must be: tests/integration/test_openapi.py fails for one that is not)

Put `@describe(...)` above the route decorator. The description is the route's one declaration of who
may call it and what it takes: the document is written from it, and so is the request's handling. An
app-wide guard (readapi/auth.py) authenticates every request as its route's `auth` says before anything
else is read, and the handler declares what it receives, by name, as Litestar dependencies:
`principal: Authenticated` (the guard's principal) and `payload: Decoded[Shape]` (the body decoded as
the description's `body`, by `decode_body`'s rules; tests/unit/test_route_declarations.py checks that
`Shape` is that `body`). A handler keeps `request: Request` for what else it reads (headers, query,
read-your-writes waits):

    @describe("Create a customer", Auth(scope="customers:write"), body=customers.CustomerCreate,
              answer=Customer, errors=(404,), example={"email": "ada@example.com"})
    @post("/api/customers", status_code=200)
    async def create_customer(request: Request, principal: Authenticated,
                              payload: Decoded[customers.CustomerCreate]) -> Response: ...

- `summary`: one line, shown in /docs.
- `auth`: `Auth(accept, scope, role)`: the credential kinds the route accepts, from "operator"
  (`Authorization: Token`), "apikey" (HTTP Basic) and "chat" (`Authorization: ChatSession`), the API
  key scope, and the least operator role (`ADMIN`, `OWNER`; documented as `x-parley-role` and refused
  with 403); `PUBLIC` for a route that needs none. 401 answers name these schemes in `WWW-Authenticate`
  (readapi/problems.py reads them from the description). A list route states the scope of its `Listing`
  (`WEBSITES_LISTING.auth`), which `POST /api/batch` checks too. `kept=True` marks the hot writes
  (`POST /api/messages`, `POST /api/chat/messages`): they stay raw `(request)` handlers that call
  `with_principal(request, command)`, which reads this Auth and `body` from the description and trusts
  a principal kept from an earlier request (no lookup; the store refuses the append once it is revoked).
  `OPERATOR_ENROLLING` (`enrolling=True`) opens a route to an operator who must enrol in two-factor sign-in
  before anything else (their profile, the enrolment, sign-out); every other route refuses them with 403.
- `body`: the Struct (or `list[Struct]`) the handler receives as `payload`; `body_required=False` when
  an empty body is accepted too (`payload` is then None). `example` is an example body. A file sent as
  the body itself (not JSON) is `RawBody(media_types, description)`, a multipart upload of one `file` part
  `file_upload(description)`; the handler reads either from `request`.
- `answer`: the success body's type (a Struct, `list[Struct]`, a dict type ...); `None` for no body.
  `status` overrides the route decorator's status code (e.g. a DELETE that answers 204);
  `media_type` "text/event-stream" for Server-Sent Events or another stream, `answer` then a text saying
  what the frames or lines are. `downloads`: other media types `Accept` may choose (`{"text/csv": "what
  the rows are"}`), documented beside the JSON answer.
- `query`: `Parameter`s (`query(name, type, ...)`, `header(name, type, ...)`), or
  `collection_query(COLLECTION)` for a collection's filters, sort, limit, skip and fields. Types are
  msgspec types: `Annotated[int, Meta(ge=0)]`, `Literal["a", "b"]`, `uuid.UUID`, `bool` ...
- Path parameters come from the route's path: `{conversation_id:str}` is documented as `conversationId`
  (the contract's names); an `..._id` is a UUID, anything else a string (`PATH_NAMES` overrides).
- `errors`: statuses beyond the automatic ones. Automatic: 400 (every route: API-Version, URL rules,
  validation), 401 and 403 (authenticated routes), 404 (routes with path parameters), 429 and 503
  (`/api/`: PostgreSQL out of reach, or read models behind; with Retry-After), 413 (routes with a body).
- `also`: other statuses answered with the success body (`/readyz` answers 503 with its report).
  Every error is `application/problem+json` with the `Problem` schema.
- `headers`: response header names (from `RESPONSE_HEADERS`) beyond the automatic ones: `API-Version` on
  every answer, `RateLimit`/`RateLimit-Policy` under `/api/`, `Parley-Position` on writes (`position=False`
  turns it off), `Deprecation`/`Sunset`/`Link` for a route declared `@deprecated`.
- `links`: what the answer lets a client do next, for tools that follow them (Schemathesis' stateful
  phase): `{operationId: {parameterName: "$response.body#/_id", "requestBody": {...}}}`.
- `tag` groups operations in /docs; it defaults to the route's first path segment after `/api/`. Every tag
  is described in `TAGS` (the document's top-level `tags`).
- `operation_id`: the operation's name for integrators and generated clients: camelCase, a verb and the
  resource (`listDocuments`, `createMessage`, `updateWebhookSubscription`), unique and never renamed
  (client code is written against it). `links` name their targets by it. tests/unit/test_route_declarations.py
  fails for a route without one.

A route that is not part of the API (a static asset) is marked `@undocumented("why")` instead.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Iterable, Literal

import msgspec
from litestar import Litestar
from litestar.handlers import HTTPRouteHandler

from readapi.auth import KIND_NAMES, OPT_KEY, SECURITY_SCHEMES, Auth, authenticated_as_described
from projections.views.collections import MAX_COUNT, Collection
from projections.views.payloads import WEBHOOK_DATA
from readapi.deprecation import OPT_KEY as DEPRECATION_KEY
from readapi.problems import TITLES, Problem
from projections.views.parameters import Parameter, header, partial, query

UNDOCUMENTED_KEY = "parley_undocumented"
@dataclass(frozen=True)
class RawBody:
    """A request body that is a file in one of `media_types`, sent as it is (not JSON)."""

    media_types: tuple[str, ...]
    description: str


MULTIPART = "multipart/form-data"


def file_upload(description: str) -> RawBody:
    """A `multipart/form-data` request body whose `file` part is a file, streamed by its handler."""
    return RawBody((MULTIPART,), description)


@dataclass(frozen=True)
class Operation:
    summary: str
    auth: Auth
    body: Any = None
    body_required: bool = True
    example: Any = None
    answer: Any = None
    status: int | None = None
    media_type: str = "application/json"
    downloads: dict[str, str] = field(default_factory=dict)  # other media types `Accept` may ask for: what they hold
    query: tuple[Parameter, ...] = ()
    errors: tuple[int, ...] = ()
    also: tuple[int, ...] = ()
    headers: tuple[str, ...] = ()
    position: bool | None = None  # Parley-Position on the answer; None: on every write (not GET)
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    description: str = ""
    tag: str | None = None
    operation_id: str = ""


def describe(summary: str, auth: Auth, **details: Any):
    """Describes a route to the OpenAPI document; put it above the route decorator."""
    operation = Operation(summary, auth, **details)

    def declare(handler: HTTPRouteHandler) -> HTTPRouteHandler:
        handler.opt[OPT_KEY] = operation
        if auth.guarded:
            handler.guards = [*(handler.guards or ()), authenticated_as_described]
        return handler
    return declare


def undocumented(why: str):
    """Marks a route that is not part of the API (a static asset): the document leaves it out."""
    def declare(handler: HTTPRouteHandler) -> HTTPRouteHandler:
        handler.opt[UNDOCUMENTED_KEY] = why
        handler.include_in_schema = False
        return handler
    return declare


def operation_of(handler: Any) -> Operation | None:
    return handler.opt.get(OPT_KEY) if handler is not None else None


@dataclass(frozen=True)
class ListOf:
    """The answer of a list read that takes `fields`: an array of whole records, or (with `fields`) of
    records holding `_id` and the named fields only."""

    shape: type[msgspec.Struct]


# link expressions: the created record's id, or (a website) its name
ID = "$response.body#/_id"
NAME = "$response.body#/websiteName"


# ---- query parameters shared by many routes ----------------------------------------------------------

Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
# the contract's defaults, stated in the schema (`default` is documentation only: the views apply it)
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT, extra_json_schema={"default": 0})]
LIMIT = query("limit", Offset, "At most this many records; 0 (the default) means no limit.")
SKIP = query("skip", Offset, "Skip this many records first; 0 by default.")
SORT_DIRECTION = query("sortDirection", Literal["ASC", "DESC"], "The sort direction.")
API_VERSION = header("API-Version", Literal["1"], "The API version the client speaks; 1 when absent.")
FILTER_TYPES = {"uuid": uuid.UUID, "str": str, "bool": bool, "labels": str}
FILTER_DESCRIPTIONS = {"labels": "Only records carrying every label named (comma-separated names)."}


def fields_parameter(shape: type[msgspec.Struct]) -> Parameter:
    names = [f.encode_name for f in msgspec.structs.fields(shape)]
    one = "(" + "|".join(re.escape(n) for n in names) + ")"
    return query("fields", Annotated[str, msgspec.Meta(pattern=f"^{one}(,{one})*$")],
                 "Comma-separated field names: only these (and `_id`) are returned.")


def collection_query(collection: Collection, *extra: Parameter) -> tuple[Parameter, ...]:
    """The query of `GET /api/<collection>`: its filters, sort, limit, skip and fields."""
    filters = [query(name, FILTER_TYPES[kind], FILTER_DESCRIPTIONS.get(kind, f"Only records whose `{name}` is this."))
               for name, (_, kind) in collection.filters.items()]
    sort_field = query("sortField", Literal[tuple(collection.sorts)],  # type: ignore[misc]
                       f"The field to sort by; `{collection.default_sort}` by default.")
    return (*filters, sort_field, SORT_DIRECTION, LIMIT, SKIP, fields_parameter(collection.shape), *extra)


# ---- headers -------------------------------------------------------------------------------------------

def _header(description: str, schema: dict[str, Any] | None = None, required: bool = False) -> dict[str, Any]:
    return {"description": description, "required": required, "schema": schema or {"type": "string"}}


RESPONSE_HEADERS: dict[str, dict[str, Any]] = {
    "API-Version": _header("The API version that answered.", {"type": "string", "enum": ["1"]}, True),
    "RateLimit-Policy": _header('The rate-limit policy of the request\'s credential: `"<name>";q=<quota>;w=60`.',
                                required=True),
    "RateLimit": _header('What is left of the current window: `"<name>";r=<remaining>;t=<seconds to reset>`.',
                         required=True),
    "Retry-After": _header("Seconds to wait before trying again: until the rate-limit window ends (429), or "
                           "for PostgreSQL or the read models (503).",
                           {"type": "string", "pattern": "^[0-9]+$"}, True),
    "Parley-Position": _header("The event-store position of this write; a later read by the same "
                               "organization sees it (read-your-writes).", {"type": "string", "pattern": "^[0-9]+$"}),
    "WWW-Authenticate": _header("The credential schemes this route accepts.", required=True),
    "Location": _header("Where the created resource can be read.", required=True),
    "ETag": _header("The version of the record as answered: send it back as `If-Match` to change it only if "
                    "nobody changed it since (412 otherwise).", required=True),
    "Deprecation": _header("When this route was deprecated (RFC 9745: `@<unix seconds>`).", required=True),
    "Sunset": _header("When this route will be removed (RFC 8594, an HTTP date).", required=True),
    "Link": _header('The deprecation notice: `<url>; rel="deprecation"`.', required=True),
}
ERROR_DESCRIPTIONS = {
    400: "The request is invalid (body, query, path or headers); `field` names the part at fault.",
    401: "No credential, or an invalid or revoked one.",
    403: "The credential is of a kind this route does not accept, or lacks the scope.",
    404: "The resource does not exist (or belongs to another organization or website).",
    409: "The resource's state does not allow this request.",
    412: "`If-Match` names a version the resource has moved on from: nothing was changed.",
    413: "The request body is too large.",
    415: "The request body's Content-Type is not one this route accepts.",
    429: "The credential's (or the client address's) rate limit is spent for this window.",
    503: "PostgreSQL is out of reach, or the read models are behind the caller's latest write (a write that "
         "was stored says so, with its Parley-Position: do not repeat it); retry after Retry-After.",
}
# The document's top-level tags: every tag an operation uses, described here (a test fails for one that is not).
TAGS = {
    "apikeys": "API keys: HTTP Basic credentials for integrations, with scopes, an optional website and rate.",
    "attachments": "Files on messages: uploads, and their bytes behind signed, expiring links.",
    "audit": "The organization's audit log: who changed what, when.",
    "batch": "Several collection reads in one request.",
    "campaigns": "Proactive messages sent to an audience of customers.",
    "cannedresponses": "Replies an operator inserts by shortcut: the organization's and personal ones.",
    "chat": "The visitor's side, as the embedded widget calls it with a chat-session credential.",
    "conversations": "Conversations between a website's customers and the team.",
    "customers": "The people who talk to a website: its visitors, known or anonymous.",
    "documents": "Help documents: written by operators, searched by visitors and the AI agent.",
    "events": "The organization's event history: read, followed live, or exported.",
    "invitations": "Invitations to join an organization's team, accepted with the link's token.",
    "mail": "E-mail: whether the service sends any, inbound replies from a mail provider, unsubscribe links.",
    "messages": "Messages of conversations, with their ratings, reactions and read receipts.",
    "notifications": "The operator's notification centre: what happened that concerns you, read or unread.",
    "operators": "The team's members: signing in and out, profiles, passwords, sessions and roles.",
    "organization": "The organization's own settings.",
    "password-resets": "Password reset links: asked for by e-mail, used once.",
    "pets": "Mascot artwork checked before it is used.",
    "realtime": "The operator dashboard's live stream.",
    "reports": "Figures about conversations over a period.",
    "teams": "The organization's teams: groups of operators a conversation can be assigned to.",
    "labels": "The organization's labels, put on conversations to sort and filter them.",
    "sandbox": "Demonstration routes that need no credential.",
    "search": "Search across the organization's conversations, messages, notes and customers.",
    "setup": "A fresh install's first owner and organization.",
    "sso": "Single sign-on with an organization's OpenID Connect provider.",
    "webhooksubscriptions": "Webhook subscriptions: signed HTTP calls to a customer's URL on events.",
    "websites": "The organization's websites, their settings and AI agents.",
    "docs": "This API's own description.",
    "health": "Liveness and readiness of this server.",
}
SSE_EVENT = {"type": "object", "properties": {"id": {"type": "string"}, "event": {"type": "string"},
                                             "data": {"type": "string"}, "retry": {"type": "integer"}}}
PATH_NAMES = {"website_name": ("websiteName", {"type": "string"}, "The website's name."),
              "subscription_id": ("webhookSubscriptionId", {"type": "string", "format": "uuid"},
                                  "The webhook subscription's `_id`."),
              # a browser's route: whatever names no organization lands on /app/ with the reason (a 302)
              "organization_id": ("organizationId", {"type": "string"},
                                  "The organization's `_id`; any other value lands on /app/ with the reason."),
              "tool_call_id": ("toolCallId", {"type": "string"}, "The id the AI agent gave the action it offered."),
              "response_id": ("id", {"type": "string", "format": "uuid"}, "The canned response's `_id`.")}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def path_parameter(name: str) -> tuple[str, dict[str, Any]]:
    documented, schema, description = PATH_NAMES.get(name) or (
        camel(name), {"type": "string", "format": "uuid"} if name.endswith("_id") else {"type": "string"}, "")
    return documented, {"name": documented, "in": "path", "required": True, "schema": schema,
                        **({"description": description} if description else {})}


# ---- the document ------------------------------------------------------------------------------------

@dataclass
class _Schemas:
    """Every type the document names, turned into JSON Schema in one pass so components are shared."""

    types: list[Any] = field(default_factory=list)
    # where each schema goes: (the object, its key, the type's index, or a list of alternatives' indexes)
    places: list[tuple[dict[str, Any], str, list[int]]] = field(default_factory=list)

    def index(self, type_: Any) -> int:
        self.types.append(type_)
        return len(self.types) - 1

    def place(self, target: dict[str, Any], key: str, answer: Any) -> None:
        """`answer` is a type, a `ListOf`, or a tuple of them (any of which may be answered)."""
        alternatives = answer if isinstance(answer, tuple) else (answer,)
        indexes = []
        for alternative in alternatives:
            if isinstance(alternative, ListOf):
                indexes += [self.index(list[alternative.shape]), self.index(list[partial(alternative.shape)])]
            else:
                indexes.append(self.index(alternative))
        self.places.append((target, key, indexes))

    def resolve(self) -> dict[str, Any]:
        """Fills every place; answers the components."""
        resolved, components = msgspec.json.schema_components(
            [*self.types, Problem], ref_template="#/components/schemas/{name}")
        assert resolved[-1] == {"$ref": "#/components/schemas/Problem"}
        for target, key, indexes in self.places:
            target[key] = resolved[indexes[0]] if len(indexes) == 1 else {"anyOf": [resolved[i] for i in indexes]}
        _mark_date_times(self.types, components)
        return components


def _mark_date_times(types: list[Any], components: dict[str, Any]) -> None:
    """msgspec writes a datetime field as a bare string (it adds `format: date-time` only for a type that
    demands a time zone), so the document says what those strings are itself."""
    seen: set[type] = set()

    def is_time(info: msgspec.inspect.Type) -> bool:
        return isinstance(info, msgspec.inspect.DateTimeType) or (
            isinstance(info, msgspec.inspect.UnionType) and any(map(is_time, info.types)))

    def mark(schema: dict[str, Any]) -> None:
        for branch in schema.get("anyOf", [schema]):
            if branch.get("type") == "string":
                branch["format"] = "date-time"

    def walk(info: msgspec.inspect.Type) -> None:
        if isinstance(info, msgspec.inspect.StructType):
            if info.cls in seen:
                return
            seen.add(info.cls)
            properties = components.get(info.cls.__name__, {}).get("properties", {})
            for field in info.fields:
                if is_time(field.type) and field.encode_name in properties:
                    mark(properties[field.encode_name])
                walk(field.type)
        elif isinstance(info, msgspec.inspect.UnionType):
            for member in info.types:
                walk(member)
        elif isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.FrozenSetType,
                               msgspec.inspect.VarTupleType)):
            walk(info.item_type)
        elif isinstance(info, msgspec.inspect.DictType):
            walk(info.value_type)

    for info in msgspec.inspect.multi_type_info(types):
        walk(info)


def _summary_kinds(auth: Auth) -> str:
    if not auth.accept:
        return "No credential is needed."
    kinds = " or ".join(KIND_NAMES[kind] for kind in auth.accept)
    scope = f" An API key needs the `{auth.scope}` scope." if auth.scope and "apikey" in auth.accept else ""
    role = f" An operator needs the `{auth.role}` role or above (owner > admin > agent)." if auth.role else ""
    return f"Accepts {kinds}.{scope}{role}"


def _headers(names: Iterable[str]) -> dict[str, Any]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in dict.fromkeys(names)}


def _operation(path: str, method: str, handler: HTTPRouteHandler, op: Operation, schemas: _Schemas) -> dict[str, Any]:
    """One operation object; its schemas are filled in once every type is known."""
    limited = path.startswith("/api/")
    deprecation = handler.opt.get(DEPRECATION_KEY)
    common = ["API-Version", *(("RateLimit-Policy", "RateLimit") if limited else ())]
    if deprecation:
        common += ["Deprecation", "Sunset", "Link"]
    status = op.status or handler.status_code
    position = op.position if op.position is not None else method != "get"
    success: dict[str, Any] = {"description": op.summary,
                               "headers": _headers([*common, *(["Parley-Position"] if position else []),
                                                    *op.headers])}
    if op.answer is not None:
        media: dict[str, Any] = {}
        if op.media_type == "text/event-stream":  # each Server-Sent Event's fields; what they hold in words
            media["schema"] = {**SSE_EVENT, "description": op.answer}
        elif isinstance(op.answer, str):  # a stream's lines, described in words
            media["schema"] = {"type": "string", "description": op.answer}
        else:
            schemas.place(media, "schema", op.answer)
        success["content"] = {op.media_type: media, **{
            download: {"schema": {"type": "string", "description": held}} for download, held in op.downloads.items()}}
    if op.links:
        success["links"] = {target: {"operationId": target, **({"parameters": parameters} if (
            parameters := {k: v for k, v in values.items() if k != "requestBody"}) else {}),
            **({"requestBody": values["requestBody"]} if "requestBody" in values else {})}
            for target, values in op.links.items()}
    responses: dict[str, Any] = {str(status): success, **{str(code): success for code in op.also}}
    errors = {400, *op.errors}
    if op.auth.accept:
        errors |= {401, 403}
    if "{" in path:
        errors.add(404)
    if limited:
        errors |= {429, 503}
    if op.body is not None:
        errors.add(413)
    for code in sorted(errors):
        extra = {401: ["WWW-Authenticate"], 429: ["Retry-After"], 503: ["Retry-After"]}.get(code, [])
        responses[str(code)] = {
            "description": ERROR_DESCRIPTIONS.get(code, TITLES.get(code, "Error")),
            "headers": _headers([*common, *extra]),
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
    parameters: list[dict[str, Any]] = []
    for name in re.findall(r"{(\w+)(?::\w+)?}", path):
        parameters.append(path_parameter(name)[1])
    parameters.append({"$ref": "#/components/parameters/API-Version"})
    for parameter in op.query:
        entry = {"name": parameter.name, "in": parameter.location, "required": parameter.required}
        if parameter.description:
            entry["description"] = parameter.description
        schemas.place(entry, "schema", parameter.type)
        parameters.append(entry)
    security = [{SECURITY_SCHEMES[kind][0]: []} for kind in op.auth.accept]
    operation: dict[str, Any] = {
        "operationId": op.operation_id or camel(handler.handler_name),
        "summary": op.summary,
        "description": "\n\n".join(part for part in (op.description, _summary_kinds(op.auth)) if part),
        "tags": [op.tag or path.removeprefix("/api/").split("/")[0]],
        "parameters": parameters,
        "responses": responses,
        "security": security,
    }
    if op.auth.role:
        operation["x-parley-role"] = op.auth.role
    if deprecation:
        operation["deprecated"] = True
    if isinstance(op.body, RawBody) and op.body.media_types == (MULTIPART,):
        operation["requestBody"] = {"required": True, "description": op.body.description, "content": {
            MULTIPART: {"schema": {"type": "object", "required": ["file"], "properties": {
                "file": {"type": "string", "format": "binary"}}}}}}
    elif isinstance(op.body, RawBody):
        operation["requestBody"] = {"required": True, "description": op.body.description, "content": {
            media_type: {"schema": {"type": "string", "format": "binary"}} for media_type in op.body.media_types}}
    elif op.body is not None:
        body_media: dict[str, Any] = {}
        schemas.place(body_media, "schema", op.body)
        if op.example is not None:
            body_media["example"] = op.example
        operation["requestBody"] = {"required": op.body_required, "content": {"application/json": body_media}}
    return operation


def documented_path(route_path: str) -> str:
    """`/api/conversations/{conversation_id:str}` -> `/api/conversations/{conversationId}`."""
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: "{" + path_parameter(m.group(1))[0] + "}", route_path)


def webhook_operations(schemas: _Schemas) -> dict[str, Any]:
    """The document's `webhooks`: what each event a subscription names posts to its URL (signed, see the
    webhook subscriptions). A subscription's `events` empty means the events there were when it was made;
    `"*"` every event, now and later."""
    operations = {}
    for name, shape in WEBHOOK_DATA.items():
        properties: dict[str, Any] = {"event": {"const": name}, "timestamp": {
            "type": "integer", "description": "The event's commit time, Unix seconds; the same on every retry."}}
        schemas.place(properties, "data", shape)
        operations[name] = {"post": {
            "summary": f"`{name}`", "operationId": "webhook" + "".join(p.title() for p in re.split(r"[._]", name)),
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["event", "timestamp", "data"], "properties": properties}}}},
            # the receiver checks the request's signature header, not a credential of this API
            "security": [],
            "responses": {"2XX": {"description": "Delivered; any other answer is retried."}}}}
    return operations


def route_handlers(app: Litestar) -> Iterable[tuple[str, HTTPRouteHandler]]:
    """Every (path, handler) the app serves, but Litestar's own automatic OPTIONS handlers."""
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if isinstance(handler, HTTPRouteHandler) and handler.handler_name != "options_handler":
                yield route.path, handler


def public_base_url(app: Litestar) -> str:
    """Where clients reach this server: PARLEY_PUBLIC_URL, else the address it listens on, else (not bound
    yet, as in tests that read the bare app) the document's own origin."""
    services = app.state.get("services")
    base = (services.settings.public_url or services.base_url).rstrip("/") if services else ""
    return base or "/"


def build_document(app: Litestar) -> dict[str, Any]:
    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    for path, handler in route_handlers(app):
        op = operation_of(handler)
        if op is None:
            continue  # undocumented (a test keeps these to the routes marked so)
        for method in sorted(handler.http_methods - {"HEAD", "OPTIONS"}):
            paths.setdefault(documented_path(path), {})[method.lower()] = _operation(
                path, method.lower(), handler, op, schemas)
    api_version = {"name": API_VERSION.name, "in": "header", "required": False,
                   "description": API_VERSION.description}
    schemas.place(api_version, "schema", API_VERSION.type)
    webhooks = webhook_operations(schemas)
    components = schemas.resolve()
    # only the headers some answer names (Deprecation, Sunset and Link wait for a deprecated route)
    used_headers = {name for item in paths.values() for operation in item.values()
                    for answer in operation["responses"].values() for name in answer.get("headers", {})}
    used_tags = sorted({tag for item in paths.values() for operation in item.values() for tag in operation["tags"]})
    return {
        "openapi": "3.1.0",
        "info": {"title": "Parley", "version": "1",
                 "description": "The Parley REST API. Every error is `application/problem+json`."},
        "servers": [{"url": public_base_url(app), "description": "This Parley server."}],
        "tags": [{"name": tag, **({"description": TAGS[tag]} if tag in TAGS else {})} for tag in used_tags],
        "paths": dict(sorted(paths.items())),
        "webhooks": webhooks,
        "components": {"schemas": components, "headers": {
                           name: value for name, value in RESPONSE_HEADERS.items() if name in used_headers},
                       "parameters": {"API-Version": api_version},
                       "securitySchemes": {name: scheme for name, scheme, _ in SECURITY_SCHEMES.values()}},
    }
