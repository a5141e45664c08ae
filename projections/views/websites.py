"""Reading websites (`rm_websites`) for what is not a REST list: the origins a website's chat answers, an
organization's websites by vanity name, and a website's widget settings as the dashboard edits them and as
the widget starts with them (with whether the team is online)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import msgspec
import psycopg

from commands.admin import DEFAULT_BRAND_COLOR
from commands.deciders.website import WIDGET_FIELDS, Widget
from projections.views.availability import anyone_online
from projections.views.business_hours import open_state, website_hours


async def allowed_origins(conn: psycopg.AsyncConnection, website_id: uuid.UUID) -> list[str]:
    """The origins whose pages may call the website's visitor routes; empty for any origin (or no website)."""
    row = await (await conn.execute("SELECT allowed_origins FROM rm_websites WHERE id = %s",
                                    (website_id,))).fetchone()
    return (row and row[0]) or []


async def websites_by_name(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID | None = None
                           ) -> list[tuple[uuid.UUID, str]]:
    """The organization's websites (or the one given, if it is the organization's) as (id, name), by name."""
    return await (await conn.execute(
        "SELECT id, name FROM rm_websites WHERE org_id = %s AND (%s::uuid IS NULL OR id = %s) ORDER BY name, id",
        (org_id, website_id, website_id))).fetchall()


class WidgetView(msgspec.Struct, rename="camel"):
    """A website's widget settings (a null text: the widget's own words in the visitor's language)."""

    brand_color: str
    title: str | None
    welcome_message: str | None
    away_message: str | None
    position: str
    launcher_label: str | None
    help_search: bool
    ratings: bool
    theme: str
    language: str


class ChatConfig(WidgetView):
    """What the widget starts with: its settings, whether the team is open (business hours) and online."""

    open: bool
    next_open_at: datetime | None
    online: bool


def _widget(brand_color: str | None, stored: dict | None) -> dict:
    widget = msgspec.structs.asdict(Widget())
    widget.update({k: v for k, v in (stored or {}).items() if k in WIDGET_FIELDS})
    return {"brand_color": brand_color or DEFAULT_BRAND_COLOR, **widget}


async def widget_settings(conn: psycopg.AsyncConnection, org_id: uuid.UUID, website_id: uuid.UUID) -> WidgetView | None:
    row = await (await conn.execute("SELECT brand_color, widget FROM rm_websites WHERE id = %s AND org_id = %s",
                                    (website_id, org_id))).fetchone()
    return row and WidgetView(**_widget(*row))


async def chat_config(conn: psycopg.AsyncConnection, website_id: uuid.UUID) -> ChatConfig | None:
    """The widget's start-up settings; None for no website. `online`: an operator of the team is (their
    availability, projections/views/availability.py); `open` and `nextOpenAt`: its business hours now
    (projections/views/business_hours.py; every hour is open until they are set)."""
    row = await (await conn.execute("SELECT org_id, brand_color, widget FROM rm_websites WHERE id = %s",
                                    (website_id,))).fetchone()
    if row is None:
        return None
    online = await anyone_online(conn, row[0], website_id)
    hours = open_state(await website_hours(conn, website_id), datetime.now(timezone.utc))
    return ChatConfig(**_widget(row[1], row[2]), open=hours.open, next_open_at=hours.next_open_at, online=online)
