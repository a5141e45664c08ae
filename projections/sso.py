"""The organizations' single sign-on settings (`rm_sso`), without the client secret: what the settings page
shows and which organization an e-mail domain signs in to."""

from __future__ import annotations

from events import types as ev
from projections.handlers import ReadModel

DDL = """
CREATE TABLE IF NOT EXISTS rm_sso (
    org_id uuid PRIMARY KEY, issuer text NOT NULL, client_id text NOT NULL, allowed_domains text[] NOT NULL,
    default_role text NOT NULL, button_label text NOT NULL, enabled boolean NOT NULL);
CREATE INDEX IF NOT EXISTS rm_sso_domains ON rm_sso USING gin (allowed_domains);
"""


async def _configured(conn, e: ev.SsoConfigured) -> None:
    await conn.execute(
        "INSERT INTO rm_sso (org_id, issuer, client_id, allowed_domains, default_role, button_label, enabled) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (org_id) DO UPDATE SET issuer = excluded.issuer, "
        "client_id = excluded.client_id, allowed_domains = excluded.allowed_domains, "
        "default_role = excluded.default_role, button_label = excluded.button_label, enabled = excluded.enabled",
        (e.org_id, e.issuer, e.client_id, e.allowed_domains, e.default_role, e.button_label, e.enabled))


class SsoProjection(ReadModel):
    name, ddl, tables = "sso", DDL, ("rm_sso",)
    handlers = {ev.SsoConfigured: _configured}
    handles = (ev.SsoConfigured,)
