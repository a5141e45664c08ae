"""Uploading a file for a message (`POST /api/attachments`, `POST /api/chat/attachments`).

What is kept is decided by the bytes, never by the name or the type the client declares: the first bytes
must be one of `ALLOWED` (magic bytes; markup such as HTML, SVG or XML is refused, whatever it is called).
An image is decoded and encoded again from its pixels alone, so no metadata (EXIF with a GPS position,
comments, ICC profiles, crafted chunks) reaches anyone, and a thumbnail is made. The body is streamed to a
staged file on disk and refused as soon as it passes the size limit: never held whole in memory."""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import os
import re
import tempfile
import warnings
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import AsyncIterator, Sequence

from PIL import Image, ImageOps

from commands.errors import CommandError, Invalid, NotFound
from commands.principal import Principal
from commands.streams import now
from events import types as ev
from events.blobs import BlobStore
from events.ids import new_id, parse_id
from events.store import EventStore, Pending

IMAGES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WEBP"}
# the zip-based office formats are zip files by their bytes; their name only tells which
OFFICE = {".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
          ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
          ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
          ".odt": "application/vnd.oasis.opendocument.text",
          ".ods": "application/vnd.oasis.opendocument.spreadsheet"}
ALLOWED = (*IMAGES, "application/pdf", "application/zip", *OFFICE.values(), "text/plain", "text/csv")
CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7f)) - set("\t\n\r\f")
SNIFF_BYTES = 512  # what the type is decided on
MAX_PIXELS = 25_000_000  # refused before decoding: a small file may declare a huge image
THUMBNAIL_SIZE = (320, 320)  # at most, keeping the proportions
THUMBNAIL_TYPE = "image/webp"
MAX_NAME = 200
MAX_PER_MESSAGE = 10
# An upload not attached to a message within this time is removed (delivery/attachments.py), and can no
# longer be attached: the one rule both follow, so that no message names a removed file.
ATTACH_WITHIN = timedelta(days=1)


class TooLarge(CommandError):
    status, title = 413, "Content Too Large"


class UnsupportedType(CommandError):
    status, title = 415, "Unsupported Media Type"


@dataclass(frozen=True)
class AttachmentSettings:
    """The `PARLEY_ATTACHMENT_*` limits (docs/configuration.md) and where uploads are staged."""

    attachment_max_bytes: int
    attachment_message_max_bytes: int
    staging: Path


@dataclass(frozen=True)
class Uploaded:
    attachment: ev.AttachmentUploaded
    position: int


def safe_name(raw: str | None) -> str:
    """The file's name as shown: its last path segment only (no folders, no `..`), without control
    characters, at most `MAX_NAME` characters; `file` when nothing is left."""
    name = re.split(r"[/\\]", raw or "")[-1]
    name = "".join(c for c in name if c.isprintable()).strip().strip(".")
    if len(name) > MAX_NAME:
        stem, dot, suffix = name.rpartition(".")
        name = (stem[:MAX_NAME - len(suffix) - 1] + dot + suffix) if dot and len(suffix) <= 10 else name[:MAX_NAME]
    return name or "file"


def sniffed_type(head: bytes, name: str) -> str | None:
    """The allowed type the first bytes show, or None. Text is UTF-8 without control characters (but tabs
    and line ends) that is not markup."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    suffix = os.path.splitext(name)[1].lower()
    if head.startswith(b"PK\x03\x04"):
        return OFFICE.get(suffix, "application/zip")
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    if not text or any(c in CONTROL for c in text):
        return None  # binary: an executable's header is no text even where it decodes
    if head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<"):
        return None  # HTML, SVG, XML: markup a browser would run
    return "text/csv" if suffix == ".csv" else "text/plain"


class Staged:
    """An upload being written to a file of the staging folder while its digest and size are counted."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=folder, prefix="upload-")
        self.path = Path(name)
        self.file = os.fdopen(handle, "wb")
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes) -> None:
        self.file.write(chunk)
        self.hash.update(chunk)
        self.size += len(chunk)

    def close(self) -> str:
        self.file.close()
        return self.hash.hexdigest()

    def discard(self) -> None:
        self.file.close()
        self.path.unlink(missing_ok=True)


async def stage(chunks: AsyncIterator[bytes], settings: AttachmentSettings, name: str) -> tuple[Staged, str]:
    """The upload staged whole, with its sniffed type: refused (415) on its first bytes when its type is not
    allowed, and (413) as soon as it passes the size limit."""
    staged, head, content_type = Staged(settings.staging), b"", None
    try:
        async for chunk in chunks:
            if content_type is None:
                head += chunk
                if len(head) < SNIFF_BYTES:
                    continue
                content_type = checked_type(head, name)
                chunk, head = head, b""
            staged.write(chunk)
            if staged.size > settings.attachment_max_bytes:
                raise too_large(settings.attachment_max_bytes)
        if content_type is None:
            content_type = checked_type(head, name)
            staged.write(head)
    except BaseException:
        staged.discard()
        raise
    return staged, content_type


def checked_type(head: bytes, name: str) -> str:
    found = sniffed_type(head[:SNIFF_BYTES], name)
    if found is None:
        raise UnsupportedType("this kind of file is not accepted: images (PNG, JPEG, WebP), PDF, plain text, "
                              "CSV, zip and office documents are (recognised by their content, not their name)",
                              "file")
    return found


def too_large(limit: int) -> TooLarge:
    return TooLarge(f"a file is at most {limit} bytes", "file")


def reencoded(path: Path, content_type: str, staging: Path) -> tuple[Path, Path]:
    """The image at `path` encoded again from its pixels alone (upright, no metadata), and its thumbnail:
    two new files of the staging folder. Runs on a worker thread: decoding is CPU work."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=[IMAGES[content_type]]) as image:
                if image.width * image.height > MAX_PIXELS:
                    raise Invalid(f"the image has more than {MAX_PIXELS} pixels", "file")
                image.load()
                upright = ImageOps.exif_transpose(image)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise Invalid("the image cannot be read", "file") from None
    mode = "RGB" if content_type == "image/jpeg" else "RGBA"
    converted = upright.convert(mode)
    # A new image from the pixels alone: nothing of the file's metadata can follow it.
    pixels = Image.frombytes(mode, converted.size, converted.tobytes())
    del upright, converted
    full, thumb = staging / f"{path.name}.full", staging / f"{path.name}.thumb"
    pixels.save(full, IMAGES[content_type], **({"quality": 90} if content_type != "image/png" else {}))
    pixels.thumbnail(THUMBNAIL_SIZE, Image.Resampling.LANCZOS)
    pixels.save(thumb, "WEBP", quality=80, method=4)
    return full, thumb


def file_digest(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


async def store_file(blobs: BlobStore, staged: Staged, content_type: str,
                     staging: Path) -> tuple[str, int, str | None]:
    """(key, size, thumbnail key) of the staged upload, put in the store (an image re-encoded first). No
    staged file outlives it, whatever fails."""
    digest = staged.close()
    made: list[Path] = [staged.path]
    try:
        if content_type not in IMAGES:
            return await blobs.put(staged.path, digest), staged.size, None
        full, thumb = await asyncio.to_thread(reencoded, staged.path, content_type, staging)
        made += [full, thumb]
        size = full.stat().st_size
        thumbnail = await blobs.put(thumb, await asyncio.to_thread(file_digest, thumb))
        return await blobs.put(full, await asyncio.to_thread(file_digest, full)), size, thumbnail
    finally:
        for path in made:
            path.unlink(missing_ok=True)


async def upload(store: EventStore, blobs: BlobStore, settings: AttachmentSettings, principal: Principal,
                 filename: str | None, chunks: AsyncIterator[bytes]) -> Uploaded:
    """Stages, checks and stores one file, then records it (not yet attached to any message)."""
    name = safe_name(filename)
    staged, content_type = await stage(chunks, settings, name)
    key, size, thumbnail = await store_file(blobs, staged, content_type, settings.staging)
    attachment_id = new_id()
    visitor = principal.kind == "chat"
    uploaded = ev.AttachmentUploaded(
        org_id=principal.org_id, at=now(), attachment_id=attachment_id, name=name, content_type=content_type,
        size=size, blob=key, thumbnail=thumbnail, website_id=principal.website_id if visitor else None,
        customer_id=principal.customer_id if visitor else None, operator_id=principal.operator_id)
    position = await store.append_async(Pending(attachment_id, 1, uploaded))
    return Uploaded(uploaded, position)


async def attachments_to_post(store: EventStore, principal: Principal, raw_ids: Sequence[str],
                              max_bytes: int) -> tuple[ev.AttachmentRef, ...]:
    """What a new message carries for the `attachmentIds` it names: uploads of the principal's organization
    (a visitor's: their own), each attached within `ATTACH_WITHIN` of its upload. Anything else is 404, as
    an id that does not exist; together at most the per-message size limit (413)."""
    if len(raw_ids) > MAX_PER_MESSAGE:
        raise Invalid(f"a message carries at most {MAX_PER_MESSAGE} attachments", "attachmentIds")
    found: list[ev.AttachmentUploaded] = []
    for raw in dict.fromkeys(raw_ids):
        attachment_id = parse_id(raw)
        first = await store.first_async(attachment_id) if attachment_id is not None else None
        uploaded = first.event if first is not None else None
        if (not isinstance(uploaded, ev.AttachmentUploaded) or uploaded.org_id != principal.org_id
                or (principal.kind == "chat" and uploaded.customer_id != principal.customer_id)
                or uploaded.at < now() - ATTACH_WITHIN):
            raise NotFound(f"attachment {raw} not found", "attachmentIds")
        found.append(uploaded)
    if sum(a.size for a in found) > max_bytes:
        raise TooLarge(f"a message's attachments are at most {max_bytes} bytes together", "attachmentIds")
    return tuple(ev.AttachmentRef(a.attachment_id, a.name, a.content_type, a.size, a.thumbnail is not None)
                 for a in found)
