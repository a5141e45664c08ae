"""Settings, read from `PARLEY_*` environment variables. `ENVIRONMENT` is the one list of them."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated, TypeVar

import msgspec

T = TypeVar("T")
PerMinute = Annotated[int, msgspec.Meta(ge=1)]


DEFAULT_DATA_DIR = Path(".parley")  # relative: the folder `parley serve` runs in


class Settings(msgspec.Struct, kw_only=True):
    database_url: str | None = None
    nats_url: str | None = None
    qdrant_url: str | None = None
    data_dir: Path = DEFAULT_DATA_DIR
    secrets_key: str = ""
    host: str = "127.0.0.1"
    port: int = 8000
    role: str = "all"
    workers_process: bool = True
    log_level: str = "INFO"
    embedded_fsync: bool = True
    read_wait_seconds: float = 2.0
    database_wait_seconds: Annotated[float, msgspec.Meta(gt=0)] = 2.0
    max_body_bytes: int = 1_048_576
    keep_alive_seconds: Annotated[float, msgspec.Meta(gt=0)] = 75.0
    db_pool_size: int = 10
    nats_stream: str = "PARLEY_EVENTS"
    nats_replicas: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1
    leader_lease_seconds: Annotated[float, msgspec.Meta(ge=2)] = 10.0
    presence_ttl_seconds: float = 30.0
    operator_away_after_seconds: Annotated[float, msgspec.Meta(gt=0)] = 300.0
    rate_apikey_per_minute: PerMinute = 600
    rate_operator_per_minute: PerMinute = 1200
    rate_anonymous_per_minute: PerMinute = 60
    rate_signin_per_minute: PerMinute = 30
    rate_chat_sessions_per_minute: PerMinute = 20
    signin_failures_per_account: Annotated[int, msgspec.Meta(ge=1)] = 5
    trusted_proxies: str = ""
    sandbox_job_seconds: Annotated[float, msgspec.Meta(ge=0)] = 2.0
    webhook_allow_private: bool = False
    webhook_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    webhook_retry_base_seconds: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    webhook_retry_cap_seconds: Annotated[float, msgspec.Meta(gt=0)] = 7200.0
    webhook_retry_window_seconds: Annotated[float, msgspec.Meta(ge=0)] = 100_800.0
    webhook_concurrency: Annotated[int, msgspec.Meta(ge=1)] = 200
    webhook_endpoint_concurrency: Annotated[int, msgspec.Meta(ge=1)] = 4
    campaign_batch_size: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    public_url: str = ""
    mcp_allowed_hosts: str = ""
    mcp_allowed_origins: str = ""
    agent_first_event_seconds: Annotated[float, msgspec.Meta(gt=0)] = 10.0
    agent_idle_seconds: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    agent_run_seconds: Annotated[float, msgspec.Meta(gt=0)] = 120.0
    agent_retry_attempts: Annotated[int, msgspec.Meta(ge=1)] = 4
    agent_retry_base_seconds: Annotated[float, msgspec.Meta(gt=0)] = 1.0
    agent_concurrency: Annotated[int, msgspec.Meta(ge=1)] = 100
    smtp_url: str = ""
    mail_from: str = ""
    mail_domain: str = ""
    notify_digest_seconds: Annotated[float, msgspec.Meta(gt=0)] = 300.0
    message_edit_window_seconds: Annotated[float, msgspec.Meta(ge=0)] = 900.0
    smtp_inbound: str = ""
    mail_inbound_secret: str = ""
    storage_url: str = ""
    attachment_max_bytes: Annotated[int, msgspec.Meta(ge=1)] = 26_214_400
    attachment_message_max_bytes: Annotated[int, msgspec.Meta(ge=1)] = 52_428_800
    attachment_link_seconds: Annotated[int, msgspec.Meta(ge=60)] = 3600


# variable -> (setting, meaning), documented in the README from this table
ENVIRONMENT: dict[str, tuple[str, str]] = {
    "PARLEY_DATABASE_URL": ("database_url", "PostgreSQL URL; unset starts the embedded PostgreSQL"),
    "PARLEY_NATS_URL": ("nats_url", "NATS URL (JetStream enabled), or several servers of a cluster, "
                        "comma-separated; unset starts the embedded nats-server"),
    "PARLEY_QDRANT_URL": ("qdrant_url", "Qdrant server URL; unset uses Qdrant Edge (the Qdrant engine in-process) "
                          "under the data directory, which only one process can open: the API process then also "
                          "keeps the search index"),
    "PARLEY_DATA_DIR": ("data_dir", "data directory for the embedded servers and local files (default ./.parley)"),
    "PARLEY_SECRETS_KEY": ("secrets_key", "the key (32 bytes in URL-safe base64: python3 -c 'import secrets; "
                           "print(secrets.token_urlsafe(32))') that seals the identity, webhook, agent and single "
                           "sign-on secrets stored in the database; unset: the data directory's secrets.key, made "
                           "on the first start. Processes that do not share a data directory must all be given the "
                           "same one"),
    "PARLEY_HOST": ("host", "address the API listens on (default 127.0.0.1)"),
    "PARLEY_PORT": ("port", "port the API listens on (default 8000; 0 picks a free one)"),
    "PARLEY_ROLE": ("role", "api, workers or all (default all)"),
    "PARLEY_WORKERS_PROCESS": ("workers_process", "1 (default): role all runs the background workers (relay, "
                               "projections, webhook delivery) in a child process, so they and the API do not share "
                               "one interpreter lock; 0 runs everything in one process"),
    "PARLEY_LOG_LEVEL": ("log_level", "logging level (default INFO)"),
    "PARLEY_EMBEDDED_FSYNC": ("embedded_fsync", "0 turns off fsync in the embedded PostgreSQL (tests only)"),
    "PARLEY_READ_WAIT_SECONDS": ("read_wait_seconds", "longest a read waits for its writer's position (default 2)"),
    "PARLEY_DATABASE_WAIT_SECONDS": ("database_wait_seconds",
                                     "longest a request waits for PostgreSQL before it answers 503 with Retry-After "
                                     "(default 2)"),
    "PARLEY_MAX_BODY_BYTES": ("max_body_bytes", "largest accepted request body (default 1 MiB)"),
    "PARLEY_KEEP_ALIVE_SECONDS": ("keep_alive_seconds", "how long an idle HTTP connection stays open (default 75: longer "
                                  "than clients' and load balancers' idle timeouts, so that the server does not close a "
                                  "connection as a client reuses it)"),
    "PARLEY_DB_POOL_SIZE": ("db_pool_size", "read-model connections per API process (default 10)"),
    "PARLEY_NATS_STREAM": ("nats_stream", "JetStream stream name, so deployments can share a NATS (default PARLEY_EVENTS)"),
    "PARLEY_LEADER_LEASE_SECONDS": ("leader_lease_seconds",
                                    "how long a single-leader worker (the relay, each read-model group, the campaign "
                                    "sender) that stops renewing its lease (frozen, cut off from PostgreSQL) keeps "
                                    "its role before a standby takes it over (default 10, at least 2)"),
    "PARLEY_NATS_REPLICAS": ("nats_replicas", "replicas of the JetStream stream (default 1; 3 on a three-node "
                             "cluster); a stream that has more, or file storage, is never weakened by an update"),
    "PARLEY_PRESENCE_TTL_SECONDS": ("presence_ttl_seconds",
                                    "how long a crashed API process's visitors still read as online (default 30)"),
    "PARLEY_OPERATOR_AWAY_AFTER_SECONDS": ("operator_away_after_seconds",
                                           "how long after their last activity at the dashboard (a key, a click, "
                                           "the tab shown again) an operator who chose `online` reads as `away` "
                                           "(default 300)"),
    "PARLEY_RATE_APIKEY_PER_MINUTE": ("rate_apikey_per_minute",
                                      "requests per minute of an API key created without --rate (default 600)"),
    "PARLEY_RATE_OPERATOR_PER_MINUTE": ("rate_operator_per_minute",
                                        "requests per minute of an operator access token (default 1200)"),
    "PARLEY_RATE_ANONYMOUS_PER_MINUTE": ("rate_anonymous_per_minute",
                                         "requests per minute per client address without a valid credential: "
                                         "the sandbox, sign-in, 401s; also per chat session (default 60)"),
    "PARLEY_RATE_SIGNIN_PER_MINUTE": ("rate_signin_per_minute",
                                      "POST requests per minute per client address to the OAuth endpoints: the "
                                      "consent page's sign-in, /oauth/token, /oauth/register, /oauth/revoke "
                                      "(default 30)"),
    "PARLEY_RATE_CHAT_SESSIONS_PER_MINUTE": ("rate_chat_sessions_per_minute",
                                             "chat sessions a client address may start per minute "
                                             "(POST /api/chat/sessions), each of which has its own request "
                                             "budget (default 20)"),
    "PARLEY_SIGNIN_FAILURES_PER_ACCOUNT": ("signin_failures_per_account",
                                           "failed operator sign-ins allowed per e-mail address within 15 minutes; "
                                           "past them the address is refused until the 15 minutes end (default 5)"),
    "PARLEY_TRUSTED_PROXIES": ("trusted_proxies",
                               "comma-separated addresses or CIDRs of reverse proxies whose X-Forwarded-For is "
                               "believed (default none: X-Forwarded-For is ignored)"),
    "PARLEY_SANDBOX_JOB_SECONDS": ("sandbox_job_seconds",
                                   "seconds a sandbox summary job runs before it succeeds (default 2)"),
    "PARLEY_WEBHOOK_ALLOW_PRIVATE": ("webhook_allow_private", "1 allows http and loopback/private webhook URLs, and single sign-on providers at such addresses: for development and tests only"),
    "PARLEY_WEBHOOK_TIMEOUT_SECONDS": ("webhook_timeout_seconds", "time limit of one webhook delivery attempt (default 10)"),
    "PARLEY_WEBHOOK_RETRY_BASE_SECONDS": ("webhook_retry_base_seconds", "first webhook retry delay, doubled per attempt, with jitter (default 10)"),
    "PARLEY_WEBHOOK_RETRY_CAP_SECONDS": ("webhook_retry_cap_seconds", "longest delay between two webhook attempts (default 7200)"),
    "PARLEY_WEBHOOK_RETRY_WINDOW_SECONDS": ("webhook_retry_window_seconds", "how long a failing webhook delivery keeps being retried (default 100800: 28 h)"),
    "PARLEY_WEBHOOK_CONCURRENCY": ("webhook_concurrency", "webhook deliveries in flight per worker process (default 200)"),
    "PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY": ("webhook_endpoint_concurrency", "webhook deliveries in flight per subscription and worker process (default 4)"),
    "PARLEY_CAMPAIGN_BATCH_SIZE": ("campaign_batch_size", "recipients a campaign sends to per append (default 100, at most "
                                   "1000): larger batches send faster but hold the event store's write lock longer"),
    "PARLEY_PUBLIC_URL": ("public_url", "the service's external base URL (scheme, host, port), which names the "
                          "OAuth issuer and the MCP resource {base_url}/mcp; default: the address it listens on"),
    "PARLEY_MCP_ALLOWED_HOSTS": ("mcp_allowed_hosts", "comma-separated Host values /mcp accepts (host:port, "
                                 "host:* for any port; default: the public URL's and loopback's)"),
    "PARLEY_MCP_ALLOWED_ORIGINS": ("mcp_allowed_origins", "comma-separated Origin values /mcp accepts from browsers "
                                   "(default: the public URL's and loopback's)"),
    "PARLEY_AGENT_FIRST_EVENT_SECONDS": ("agent_first_event_seconds", "time limit from calling a website's AI agent to its first AG-UI event (default 10)"),
    "PARLEY_AGENT_IDLE_SECONDS": ("agent_idle_seconds", "time limit between two events of an AI agent's answer (default 30)"),
    "PARLEY_AGENT_RUN_SECONDS": ("agent_run_seconds", "time limit of one whole AI agent run (default 120); a run whose worker died is run again this long (plus 5 s) after it started"),
    "PARLEY_AGENT_RETRY_ATTEMPTS": ("agent_retry_attempts", "calls of an AI agent that fails before answering (refused connection, DNS, 5xx, 429) before the run fails (default 4)"),
    "PARLEY_AGENT_RETRY_BASE_SECONDS": ("agent_retry_base_seconds", "first delay before calling a failing AI agent again, doubled per attempt, with jitter (default 1)"),
    "PARLEY_AGENT_CONCURRENCY": ("agent_concurrency", "AI agent runs in flight per worker process (default 100)"),
    "PARLEY_SMTP_URL": ("smtp_url", "where Parley sends e-mail: smtp://[user:password@]host:port[?starttls=1|tls=1]; "
                        "unset: no e-mail is sent (docs/mail.md)"),
    "PARLEY_MAIL_FROM": ("mail_from", "the From address of Parley's e-mail (default: parley@ the reply-to domain, "
                         "else the SMTP host)"),
    "PARLEY_MAIL_DOMAIN": ("mail_domain", "the domain of the reply-to addresses (reply+<signed token>@domain) whose "
                           "mail comes back to Parley; unset: visitors' e-mails have no reply-to into the conversation"),
    "PARLEY_NOTIFY_DIGEST_SECONDS": ("notify_digest_seconds", "the digest window of notification e-mail: at most one "
                                     "mail per operator, and per visitor and conversation, per window (default 300)"),
    "PARLEY_MESSAGE_EDIT_WINDOW_SECONDS": ("message_edit_window_seconds", "how long after sending an operator may "
                                           "edit or delete their own message (default 900; an admin may any)"),
    "PARLEY_SMTP_INBOUND": ("smtp_inbound", "host:port of the service's own SMTP listener for replies to its "
                            "e-mail (default: off)"),
    "PARLEY_MAIL_INBOUND_SECRET": ("mail_inbound_secret", "the bearer secret of POST /api/mail/inbound, where a mail "
                                   "provider posts inbound mail; unset: the route answers 503"),
    "PARLEY_STORAGE_URL": ("storage_url", "where attachments' bytes are kept: an S3-compatible object store, "
                           "s3://BUCKET[/PREFIX]?endpoint=URL&region=REGION (credentials as access_key_id and "
                           "secret_access_key in the query or the AWS_* variables), which several API processes "
                           "share; unset: content-addressed files under the data directory's attachments/"),
    "PARLEY_ATTACHMENT_MAX_BYTES": ("attachment_max_bytes", "largest file an upload may be (default 26214400: "
                                    "25 MiB); a larger body is refused with 413 as soon as it is seen"),
    "PARLEY_ATTACHMENT_MESSAGE_MAX_BYTES": ("attachment_message_max_bytes", "largest total of the files one "
                                            "message carries (default 52428800: 50 MiB)"),
    "PARLEY_ATTACHMENT_LINK_SECONDS": ("attachment_link_seconds", "how long the signed links to attachments' "
                                       "bytes that a read hands out stay valid (default 3600, at least 60; "
                                       "rounded up to 10 minutes; a webhook's last 7 days)"),
}


def narrowed(settings: Settings, kind: type[T], **values: object) -> T:
    """The settings a layer below declares it needs (a dataclass whose fields are named as here), as values:
    nothing below parley/ reads Settings or the environment."""
    return kind(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(kind) if f.name not in values},
                **values)


def load_settings(**overrides: object) -> Settings:
    values: dict[str, object] = {}
    for variable, (name, _) in ENVIRONMENT.items():
        raw = os.environ.get(variable)
        if raw is not None and raw != "":
            values[name] = raw
    values.update({k: v for k, v in overrides.items() if v is not None})
    return msgspec.convert(values, Settings, strict=False, dec_hook=_from_text)


def _from_text(kind: type, value: object) -> object:
    """What msgspec does not convert by itself: a path named in a variable."""
    if kind is Path and isinstance(value, (str, Path)):
        return Path(value)
    raise NotImplementedError(f"no conversion to {kind}")
