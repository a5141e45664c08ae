"""Attachments without servers: what a file is taken for (its bytes, not its name), names without paths,
the streaming multipart reader, signed links, and what leaves through webhooks and history."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import datetime, timezone

import msgspec
import pytest
from PIL import Image

from commands.attachments import (AttachmentSettings, TooLarge, UnsupportedType, safe_name, sniffed_type, stage,
                                  store_file)
from commands.errors import Invalid
from events import types as ev
from events.blobs import LocalBlobs
from events.public import public_of
from projections.views.attachments import LINKS, WEBHOOK_LINK_SECONDS
from projections.views.payloads import webhook_event
from readapi.uploads import MultipartReader, boundary_of
from tests.support.attachments import png_bytes


@pytest.mark.parametrize("head, name, expected", [
    (png_bytes(), "x.pdf", "image/png"),
    (b"\xff\xd8\xff\xe0rest", "x.txt", "image/jpeg"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "x", "image/webp"),
    (b"%PDF-1.7\n", "invoice.exe", "application/pdf"),
    (b"PK\x03\x04rest", "report.docx",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (b"PK\x03\x04rest", "archive.bin", "application/zip"),
    (b"a,b\n1,2\n", "data.csv", "text/csv"),
    ("caf\u00e9 ok".encode(), "notes", "text/plain"),
    (b"<!doctype html><script>", "page.txt", None),
    (b"\xef\xbb\xbf  <svg onload=x>", "a.png", None),
    (b"<?xml version='1.0'?>", "a.txt", None),
    (b"MZ\x90\x00", "photo.png", None),
    (b"\x7fELF", "a.pdf", None),
    (b"GIF89a\x01\x00\x01\x00\x80\x00\x00", "a.gif", None),
    (b"text\x00with nul", "a.txt", None),
    (b"\xff\xfe\xfd", "a.txt", None),
    (b"", "empty.txt", None),
])
def test_a_file_is_taken_for_what_its_bytes_are(head, name, expected):
    assert sniffed_type(head, name) == expected


@pytest.mark.parametrize("raw, expected", [
    ("../../etc/passwd", "passwd"), ("..\\..\\win.ini", "win.ini"), ("..", "file"), ("", "file"), (None, "file"),
    ("a\x00b\nc.txt", "abc.txt"), ("report.pdf", "report.pdf"), ("/abs/path/x.png", "x.png"),
    ("x" * 300 + ".pdf", "x" * 196 + ".pdf"),
])
def test_a_name_keeps_no_path_and_no_control_characters(raw, expected):
    assert safe_name(raw) == expected


async def chunks_of(data: bytes, size: int):
    for at in range(0, len(data), size):
        yield data[at:at + size]
    yield b""


def body(boundary: str, parts: list[tuple[str, str | None, bytes]]) -> bytes:
    out = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


@pytest.mark.parametrize("chunk", [1, 7, 64, 100_000])
def test_the_multipart_reader_streams_the_file_part_whatever_the_chunking(chunk):
    boundary = "----boundary42"
    content = b"\r\n--not the boundary\r\n" + bytes(range(256)) * 40
    raw = body(boundary, [("note", None, b"skipped"), ("file", "a.bin", content), ("after", None, b"x")])

    async def read():
        part = await MultipartReader(chunks_of(raw, chunk), boundary.encode()).file()
        return part.filename, b"".join([c async for c in part.chunks])
    assert asyncio.run(read()) == ("a.bin", content)


def test_a_multipart_body_without_a_file_part_or_cut_short_is_refused():
    boundary = "b0undary"

    async def read(raw: bytes):
        part = await MultipartReader(chunks_of(raw, 16), boundary.encode()).file()
        return b"".join([c async for c in part.chunks])
    with pytest.raises(Invalid):
        asyncio.run(read(body(boundary, [("other", None, b"x")])))
    with pytest.raises(Invalid):
        asyncio.run(read(body(boundary, [("file", "a", b"abc" * 100)])[:60]))
    with pytest.raises(Invalid):
        boundary_of("application/json")
    assert boundary_of('multipart/form-data; boundary="abc"') == b"abc"


def test_staging_refuses_a_wrong_type_at_once_and_a_large_file_as_it_passes_the_limit(tmp_path):
    settings = AttachmentSettings(1000, 5000, tmp_path)
    read = []

    async def endless(first: bytes):
        yield first
        while True:
            read.append(1)
            yield b"a" * 100

    with pytest.raises(UnsupportedType):
        asyncio.run(stage(endless(b"MZ" + b"\x00" * 600), settings, "x.exe"))
    assert not read  # refused on its first bytes
    with pytest.raises(TooLarge):
        asyncio.run(stage(endless(b"%PDF-" + b"0" * 600), settings, "x.pdf"))
    assert len(read) < 10
    assert not list(tmp_path.iterdir())  # nothing staged is left


def test_the_local_store_is_content_addressed_and_refuses_other_keys(tmp_path):
    blobs = LocalBlobs(tmp_path)
    staged = tmp_path / "staged"
    staged.write_bytes(b"bytes")
    digest = "ab" * 32
    key = asyncio.run(blobs.put(staged, digest))
    assert key == f"sha256/{digest}" and (tmp_path / "sha256" / "ab" / digest).read_bytes() == b"bytes"
    for bad in ("sha256/../../etc/passwd", "sha256/" + "g" * 64, "md5/" + "a" * 64):
        with pytest.raises(ValueError):
            asyncio.run(blobs.read(bad))


def test_a_link_is_signed_and_expires(monkeypatch):
    monkeypatch.setattr(LINKS, "key", b"k" * 32)
    monkeypatch.setattr(LINKS, "base_url", lambda: "https://chat.example.com")
    attachment_id = uuid.uuid4()
    url = LINKS.url(attachment_id, "content", 60)
    path, _, query = url.partition("?")
    assert path == f"https://chat.example.com/api/attachments/{attachment_id}/content"
    params = dict(pair.split("=") for pair in query.split("&"))
    assert int(params["expires"]) >= time.time() + 60 and int(params["expires"]) % 600 == 0
    assert LINKS.valid(attachment_id, "content", params["expires"], params["signature"])
    assert not LINKS.valid(attachment_id, "thumbnail", params["expires"], params["signature"])
    assert not LINKS.valid(uuid.uuid4(), "content", params["expires"], params["signature"])
    assert not LINKS.valid(attachment_id, "content", str(int(params["expires"]) + 600), params["signature"])
    past = int(time.time()) - 1
    assert not LINKS.valid(attachment_id, "content", str(past), LINKS.signature(attachment_id, "content", past))


def message_with_attachment(**extra) -> ev.MessageCreated:
    return ev.MessageCreated(
        org_id=uuid.uuid4(), at=datetime.now(timezone.utc), message_id=uuid.uuid4(), conversation_id=uuid.uuid4(),
        website_id=uuid.uuid4(), content="", sender="operator",
        attachments=(ev.AttachmentRef(uuid.uuid4(), "a.png", "image/png", 10, True),), **extra)


def test_a_webhook_carries_each_attachment_with_a_lasting_download_link(monkeypatch):
    monkeypatch.setattr(LINKS, "key", b"k" * 32)
    e = message_with_attachment()
    name, raw = webhook_event(e, private_conversation=False)
    [attachment] = msgspec.json.decode(raw)["data"]["attachments"]
    assert name == "message.created"
    assert {k: attachment[k] for k in ("_id", "name", "contentType", "size")} == {
        "_id": str(e.attachments[0].attachment_id), "name": "a.png", "contentType": "image/png", "size": 10}
    expires = int(attachment["url"].split("expires=")[1].split("&")[0])
    assert expires >= time.time() + WEBHOOK_LINK_SECONDS
    assert webhook_event(message_with_attachment(internal=True), private_conversation=False) is None


def test_history_carries_an_uploads_metadata_never_where_its_bytes_are():
    uploaded = ev.AttachmentUploaded(org_id=uuid.uuid4(), at=datetime.now(timezone.utc), attachment_id=uuid.uuid4(),
                                     name="a.pdf", content_type="application/pdf", size=3, blob="sha256/" + "a" * 64,
                                     thumbnail=None)
    shown = msgspec.to_builtins(public_of(uploaded))
    assert "blob" not in shown and "thumbnail" not in shown and shown["name"] == "a.pdf"
    message = msgspec.to_builtins(public_of(message_with_attachment()))
    assert message["attachments"][0]["name"] == "a.png" and "url" not in str(message)


def test_an_image_that_cannot_be_read_is_refused_and_leaves_nothing_staged(tmp_path):
    settings = AttachmentSettings(10_000, 10_000, tmp_path / "staging")
    blobs = LocalBlobs(tmp_path / "store")

    async def run():
        staged, content_type = await stage(chunks_of(b"\x89PNG\r\n\x1a\n" + b"garbage" * 100, 64), settings, "x.png")
        return await store_file(blobs, staged, content_type, settings.staging)
    with pytest.raises(Invalid):
        asyncio.run(run())
    assert not list(settings.staging.iterdir()) and not (tmp_path / "store").exists()


def test_an_image_is_kept_re_encoded_with_its_thumbnail(tmp_path):
    settings = AttachmentSettings(10_000_000, 10_000_000, tmp_path / "staging")
    blobs = LocalBlobs(tmp_path / "store")

    async def run():
        staged, content_type = await stage(chunks_of(png_bytes((800, 600)), 4096), settings, "x.png")
        return await store_file(blobs, staged, content_type, settings.staging)
    key, size, thumbnail = asyncio.run(run())
    assert key.startswith("sha256/") and thumbnail.startswith("sha256/") and size > 0
    with Image.open(blobs.path_of(thumbnail)) as thumb:
        assert thumb.format == "WEBP" and max(thumb.size) == 320
    assert not list(settings.staging.iterdir())
