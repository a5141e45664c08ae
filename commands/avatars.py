"""An operator's avatar (`PUT`/`DELETE /api/operators/me/avatar`): the uploaded image is only accepted as a
PNG, JPEG or WebP file (by its first bytes, whatever the request says it is), and never kept as sent: it
is decoded, turned upright, cropped to a square, resized to `SIZE` and encoded again from its pixels
alone, so no metadata (EXIF, GPS, ICC, comments) and no crafted bytes reach visitors."""

from __future__ import annotations

import hashlib
import io
import warnings

from PIL import Image, ImageOps

from commands.admin import Created
from commands.deciders.operator import decide_avatar, fold_operator
from commands.errors import CommandError, Invalid
from commands.principal import Principal
from commands.streams import execute, now
from events.store import EventStore

SIZE = 128  # pixels, square: twice the largest size the widget and the dashboard draw it at
MAX_UPLOAD_BYTES = 5 * 1024 * 1024  # a phone's photo fits
MAX_PIXELS = 40_000_000  # refused before decoding: a small file may declare a huge image
MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp")
STORED_MEDIA_TYPE = "image/webp"
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


class UnsupportedImage(CommandError):
    status, title = 415, "Unsupported Media Type"


def sniffed_media_type(data: bytes) -> str | None:
    """The image type the bytes start as, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def reencoded(data: bytes) -> bytes:
    """The avatar made from an uploaded image: `SIZE` x `SIZE` WebP of its pixels only."""
    sniffed = sniffed_media_type(data)
    if sniffed is None:
        raise UnsupportedImage(f"the avatar is a PNG, JPEG or WebP image ({', '.join(MEDIA_TYPES)})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=[name for name, media in FORMATS.items() if media == sniffed])
            if image.width * image.height > MAX_PIXELS:
                raise Invalid(f"the image has more than {MAX_PIXELS} pixels")
            image.load()
            upright = ImageOps.exif_transpose(image).convert("RGBA")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise Invalid("the image cannot be read") from None
    square = ImageOps.fit(upright, (SIZE, SIZE), Image.Resampling.LANCZOS)
    # A new image from the pixels alone: nothing of the file's metadata can follow it.
    pixels = Image.frombytes("RGBA", square.size, square.tobytes())
    out = io.BytesIO()
    pixels.save(out, "WEBP", quality=85, method=4)
    return out.getvalue()


def digest_of(image: bytes) -> str:
    return "sha256:" + hashlib.sha256(image).hexdigest()


def set_avatar(store: EventStore, principal: Principal, data: bytes) -> Created:
    """The signed-in operator's avatar is now the uploaded image, re-encoded."""
    operator_id = principal.operator_id
    assert operator_id is not None, "an operator's credential"
    image = reencoded(data)
    appended = execute(store, principal.org_id, lambda: fold_operator(store.load(operator_id)),
                       lambda operator: decide_avatar(operator, principal.org_id, now(),
                                                      (STORED_MEDIA_TYPE, digest_of(image), image)))
    return Created(operator_id, appended.position)


def remove_avatar(store: EventStore, principal: Principal) -> Created:
    """The signed-in operator is shown by generated initials again."""
    operator_id = principal.operator_id
    assert operator_id is not None, "an operator's credential"
    appended = execute(store, principal.org_id, lambda: fold_operator(store.load(operator_id)),
                       lambda operator: decide_avatar(operator, principal.org_id, now(), None))
    return Created(operator_id, appended.position)
