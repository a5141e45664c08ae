"""Who of the team wrote a message, as visitors, the team and webhooks see them: the operator's id, display
name and avatar (`rm_operators`, `rm_operator_avatars`); never the e-mail address, which stays a staff
matter. An operator without an uploaded avatar is shown by initials the service draws itself."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Iterable
from xml.sax.saxutils import escape

import msgspec
import psycopg

INITIALS_MEDIA_TYPE = "image/svg+xml"


class OperatorIdentity(msgspec.Struct, rename="camel"):
    """The author of a team message: `avatarUrl` is a path on this service (resolve it against the API's
    base URL); it changes whenever the avatar does, so its answer may be cached for good."""

    operator_id: uuid.UUID
    display_name: str | None  # None: the operator has not set one (show the team's name)
    avatar_url: str


@dataclass(frozen=True)
class Avatar:
    media_type: str
    body: bytes
    version: str


def avatar_version(display_name: str | None, avatar_digest: str | None) -> str:
    """Names what the avatar URL shows: the uploaded image, or the initials drawn from the name."""
    if avatar_digest is not None:
        return avatar_digest.removeprefix("sha256:")[:16]
    return "i" + hashlib.sha256((display_name or "").encode()).hexdigest()[:15]


def identity(operator_id: uuid.UUID, display_name: str | None, avatar_digest: str | None) -> OperatorIdentity:
    version = avatar_version(display_name, avatar_digest)
    return OperatorIdentity(operator_id, display_name, f"/api/operators/{operator_id}/avatar?v={version}")


def identity_of_row(operator_id: uuid.UUID | None, profile: list | None) -> OperatorIdentity | None:
    """From `operator_id` and `PROFILE_COLUMN` of a message row: None for a message no operator wrote."""
    if operator_id is None or profile is None:
        return None
    return identity(operator_id, profile[0], profile[1])


def profile_column(operator_column: str) -> str:
    """A select-list column holding [display name, avatar digest] of the operator `operator_column` names:
    looked up per row returned, so a list's plan (its index order, its limit) stays as it is."""
    return (f"(SELECT json_build_array(o.display_name, o.avatar_digest) FROM rm_operators o "
            f"WHERE o.id = {operator_column})")


async def identities(conn: psycopg.AsyncConnection, operator_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, OperatorIdentity]:
    wanted = list(set(operator_ids))
    if not wanted:
        return {}
    rows = await (await conn.execute("SELECT id, display_name, avatar_digest FROM rm_operators WHERE id = ANY(%s)",
                                     (wanted,))).fetchall()
    return {row[0]: identity(*row) for row in rows}


def initials(display_name: str | None) -> str:
    """The first letter of the first and the last word: "Ada Lovelace" -> "AL"."""
    words = [word for word in (display_name or "").split() if any(c.isalnum() for c in word)]
    letters = [next(c for c in word if c.isalnum()) for word in (words[:1] + words[1:][-1:])]
    return "".join(letters).upper()


def initials_svg(operator_id: uuid.UUID, display_name: str | None) -> bytes:
    """A square of a colour of the operator's own (from its id) with its initials: drawn here from text
    only, never from anything uploaded."""
    hue = int.from_bytes(hashlib.sha256(operator_id.bytes).digest()[:2], "big") % 360
    text = escape(initials(display_name))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128" viewBox="0 0 128 128">'
            f'<rect width="128" height="128" fill="hsl({hue}, 55%, 40%)"/>'
            f'<text x="64" y="64" dy="0.35em" text-anchor="middle" fill="#fff" font-size="52" font-weight="600" '
            f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">{text}</text></svg>').encode()


async def avatar_of(conn: psycopg.AsyncConnection, operator_id: uuid.UUID) -> Avatar | None:
    """The operator's avatar: the uploaded image, else its initials; None for no such operator."""
    row = await (await conn.execute(
        "SELECT o.display_name, o.avatar_digest, a.media_type, a.image FROM rm_operators o "
        "LEFT JOIN rm_operator_avatars a ON a.digest = o.avatar_digest WHERE o.id = %s", (operator_id,))).fetchone()
    if row is None:
        return None
    display_name, digest, media_type, image = row
    if image is None:
        return Avatar(INITIALS_MEDIA_TYPE, initials_svg(operator_id, display_name), avatar_version(display_name, None))
    return Avatar(media_type, bytes(image), avatar_version(display_name, digest))
