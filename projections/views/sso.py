"""Reading the single sign-on settings (`rm_sso`, projections/sso.py): an organization's, for its owners,
and the enabled one an e-mail address's domain signs in with, for the sign-in page."""

from __future__ import annotations

import uuid

import msgspec
import psycopg


class SsoSettingsView(msgspec.Struct, rename="camel"):
    """The settings as the owners see them: never the client secret, only that one is stored."""

    issuer: str
    client_id: str
    allowed_domains: list[str]
    default_role: str
    button_label: str
    enabled: bool
    client_secret_set: bool


class SsoButton(msgspec.Struct, rename="camel"):
    """What the sign-in page offers for an e-mail address: "Sign in with <buttonLabel>", going to `startUrl`."""

    organization_id: str
    button_label: str
    start_url: str


COLUMNS = "issuer, client_id, allowed_domains, default_role, button_label, enabled"


async def sso_settings(conn: psycopg.AsyncConnection, org_id: uuid.UUID) -> SsoSettingsView | None:
    row = await (await conn.execute(f"SELECT {COLUMNS} FROM rm_sso WHERE org_id = %s", (org_id,))).fetchone()
    return row and SsoSettingsView(*row, client_secret_set=True)


async def sso_button(conn: psycopg.AsyncConnection, *, org_id: uuid.UUID | None = None,
                     domain: str | None = None) -> SsoButton | None:
    """The enabled single sign-on of the organization, or of the one that allows this e-mail domain (the
    first organization that configured it, if several do)."""
    where, value = ("org_id = %s", org_id) if org_id else ("%s = ANY(allowed_domains)", domain)
    row = await (await conn.execute(f"SELECT org_id, button_label FROM rm_sso WHERE enabled AND {where} "
                                    "ORDER BY org_id LIMIT 1", (value,))).fetchone()
    return row and SsoButton(str(row[0]), row[1], f"/api/sso/{row[0]}/start")
