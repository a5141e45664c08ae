"""A website: its settings (brand color, the origins its visitors' pages may call from, its widget's) and
its identity secret. `website_state` is the one fold of a website's stream, for the dashboard's commands and
for the visitor's sign-in."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from msgspec import UNSET, Struct, UnsetType, structs

from commands.admin import DEFAULT_BRAND_COLOR, check_brand_color
from commands.errors import Invalid
from commands.streams import Folded
from events import types as ev
from events.store import Pending, Recorded

ORIGIN_HOST = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$")  # what urlsplit leaves of a host name or address


class Widget(Struct, frozen=True, kw_only=True):
    """The widget's settings but the brand color (the website's own); a text left None is the widget's own
    words in the visitor's language."""

    title: str | None = None
    welcome_message: str | None = None
    away_message: str | None = None
    position: str = "right"
    launcher_label: str | None = None
    help_search: bool = True
    ratings: bool = True
    theme: str = "light"
    language: str = "en"


WIDGET_FIELDS = Widget.__struct_fields__


@dataclass
class WebsiteState(Folded):
    created: ev.WebsiteCreated
    brand_color: str | None
    allowed_origins: list[str]
    identity_secret: str  # sealed (or, stored before sealing, in the clear): events/sealing.py
    assignment: ev.WebsiteAssignmentConfigured | None = None  # None: off, as every website starts
    widget: Widget = Widget()


def website_state(history: list[Recorded]) -> WebsiteState | None:
    """The website a stream holds, as of its last event; None when the stream is no website."""
    if not history or not isinstance(history[0].event, ev.WebsiteCreated):
        return None
    created = history[0].event
    brand_color, origins, identity_secret, widget = created.brand_color, [], created.identity_secret, Widget()
    assignment = None
    for recorded in history[1:]:
        e = recorded.event
        if isinstance(e, ev.WebsiteUpdated):
            brand_color, origins = e.brand_color, e.allowed_origins
        elif isinstance(e, ev.WebsiteWidgetConfigured):
            brand_color, widget = e.brand_color, Widget(**{name: getattr(e, name) for name in WIDGET_FIELDS})
        elif isinstance(e, ev.WebsiteIdentitySecretRotated):
            identity_secret = e.identity_secret
        elif isinstance(e, ev.WebsiteAssignmentConfigured):
            assignment = e
    return WebsiteState(created.website_id, history[-1].version, created, brand_color, origins, identity_secret,
                        assignment, widget)


def normalized_origin(raw: str) -> str:
    """`scheme://host[:port]` in lowercase, as a browser sends it in `Origin`; anything more is refused."""
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname
            or not ORIGIN_HOST.match(parts.hostname) or parts.username is not None or parts.password is not None
            or parts.path not in ("", "/") or parts.query or parts.fragment):
        raise Invalid(f"{raw!r} is not an origin like https://www.example.com", "allowedOrigins")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default_port = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None and port != default_port else "")


def decide_settings(website: WebsiteState, at: datetime, *, brand_color: str | None | UnsetType = UNSET,
                    allowed_origins: list[str] | UnsetType = UNSET) -> list[Pending]:
    """The settings given; nothing when they are what the website has."""
    if brand_color is UNSET:
        brand_color = website.brand_color
    else:
        check_brand_color(brand_color)
    origins = website.allowed_origins if allowed_origins is UNSET else list(
        dict.fromkeys(normalized_origin(origin) for origin in allowed_origins))
    if (brand_color, origins) == (website.brand_color, website.allowed_origins):
        return []
    return website.follow(ev.WebsiteUpdated(org_id=website.created.org_id, at=at, website_id=website.created.website_id,
                                            brand_color=brand_color, allowed_origins=origins))


def decide_widget(website: WebsiteState, at: datetime, brand_color: str | UnsetType, changes: dict) -> list[Pending]:
    """The widget's settings with `changes` (and the brand color, when given); nothing when they are what the
    website has. The shape the route decodes has checked each value."""
    if brand_color is not UNSET:
        check_brand_color(brand_color)
    color = (website.brand_color or DEFAULT_BRAND_COLOR) if brand_color is UNSET else brand_color
    widget = structs.replace(website.widget, **changes)
    if (color, widget) == (website.brand_color, website.widget):
        return []
    return website.follow(ev.WebsiteWidgetConfigured(org_id=website.created.org_id, at=at,
                                                     website_id=website.created.website_id, brand_color=color,
                                                     **structs.asdict(widget)))


def decide_rotate_identity_secret(website: WebsiteState, identity_secret: str, at: datetime) -> list[Pending]:
    return website.follow(ev.WebsiteIdentitySecretRotated(org_id=website.created.org_id, at=at,
                                                          website_id=website.created.website_id,
                                                          identity_secret=identity_secret))


ASSIGNMENT_MODES = ("off", "round-robin", "least-busy")
MAX_CAPACITY = 10_000


def decide_assignment(website: WebsiteState, at: datetime, *, mode: str, capacity: int, team_id: uuid.UUID | None,
                      assign_on_reply: bool) -> list[Pending]:
    """The website's automatic assignment (the caller checked the team is the organization's); nothing when
    it is what the website has."""
    if mode not in ASSIGNMENT_MODES:
        raise Invalid(f"mode is one of {', '.join(ASSIGNMENT_MODES)}", "mode")
    if not 1 <= capacity <= MAX_CAPACITY:
        raise Invalid(f"capacity is from 1 to {MAX_CAPACITY} open conversations per operator", "capacity")
    configured = ev.WebsiteAssignmentConfigured(org_id=website.created.org_id, at=at,
                                                website_id=website.created.website_id, mode=mode, capacity=capacity,
                                                team_id=team_id, assign_on_reply=assign_on_reply)
    current = website.assignment
    if current is not None and (current.mode, current.capacity, current.team_id, current.assign_on_reply) == (
            mode, capacity, team_id, assign_on_reply):
        return []
    return website.follow(configured)
