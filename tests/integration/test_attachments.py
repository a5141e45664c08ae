"""Attachments against a real server with the embedded store: upload, message, download both ways, and the
attacks of the issue (other organizations' files, notes' files, markup, executables, metadata, huge bodies,
path traversal, altered links)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import psutil
import pytest

from delivery.attachments import Sweeper
from events import types as ev
from events.blobs import LocalBlobs
from events.store import EventStore
from tests.support.attachments import GPS_LATITUDE, gps_of, jpeg_with_gps, png_bytes, upload
from tests.support.receivers import Receiver
from tests.support.servers import make_server, make_tenant
from tests.support.visitors import Chatting, EventStream

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"


def uploaded(http, headers, name, data, path="/api/attachments") -> dict:
    response = upload(http, headers, name, data, path=path)
    assert response.status_code == 201, response.text
    return response.json()


def post_reply(http, tenant, conversation_id, attachment_ids, content="", **extra):
    return http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": conversation_id, "content": content, "from": "operator", "attachmentIds": attachment_ids,
        **extra})


def fetch(http, url: str):
    """A link as a browser follows it: no credential."""
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.netloc == urlsplit(str(http.base_url)).netloc, url
    return http.get(f"{parts.path}?{parts.query}")


def test_an_operator_sends_a_pdf_and_an_image_that_the_visitor_downloads(server, http, tenant):
    chatting = Chatting(http, tenant)
    pdf = uploaded(http, tenant.operator, "invoice 42.pdf", PDF)
    image = uploaded(http, tenant.operator, "shot.png", png_bytes())
    assert (pdf["name"], pdf["contentType"], pdf["size"]) == ("invoice 42.pdf", "application/pdf", len(PDF))
    assert image["contentType"] == "image/png"

    posted = post_reply(http, tenant, chatting.conversation_id, [pdf["_id"], image["_id"]])
    assert posted.status_code == 200, posted.text
    assert posted.json()["content"] == ""  # a message may be only attachments
    assert [a["_id"] for a in posted.json()["attachments"]] == [pdf["_id"], image["_id"]]

    listed = http.get("/api/messages", headers=tenant.operator,
                      params={"conversationId": chatting.conversation_id}).json()
    transcript = http.get("/api/chat/messages", headers=chatting.headers,
                          params={"conversationId": chatting.conversation_id}).json()
    for messages in (listed, transcript):
        [message] = messages
        first, second = message["attachments"]
        assert first["thumbnailUrl"] is None and second["thumbnailUrl"] is not None
        assert first["url"].startswith(server.base_url + "/api/attachments/")

        document = fetch(http, first["url"])
        assert document.status_code == 200 and document.content == PDF
        assert document.headers["content-type"] == "application/pdf"
        assert document.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in document.headers["content-security-policy"]
        assert document.headers["content-disposition"].startswith("attachment;")

        picture = fetch(http, second["url"])
        assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
        assert picture.headers["content-disposition"].startswith("inline;")
        thumbnail = fetch(http, second["thumbnailUrl"])
        assert thumbnail.status_code == 200 and thumbnail.headers["content-type"] == "image/webp"


def test_a_visitor_sends_a_photo_without_its_location_and_the_team_downloads_it(http, tenant):
    chatting = Chatting(http, tenant)
    photo = jpeg_with_gps()
    assert gps_of(photo)  # the test's photo does carry a position
    sent = uploaded(http, chatting.headers, "IMG_0001.jpg", photo, path="/api/chat/attachments")
    assert sent["contentType"] == "image/jpeg"
    message = http.post("/api/chat/messages", headers=chatting.headers, json={
        "conversationId": chatting.conversation_id, "content": "here", "attachmentIds": [sent["_id"]]})
    assert message.status_code == 200, message.text
    [listed] = http.get("/api/messages", headers=tenant.operator,
                        params={"conversationId": chatting.conversation_id}).json()
    [attachment] = listed["attachments"]
    downloaded = fetch(http, attachment["url"])
    assert downloaded.status_code == 200
    assert gps_of(downloaded.content) == {}
    assert b"Exif" not in downloaded.content and b"secret comment" not in downloaded.content
    assert str(GPS_LATITUDE[0]).encode() not in downloaded.content
    assert attachment["size"] == len(downloaded.content)  # the size of what is kept: the re-encoded image


def test_another_organizations_upload_is_not_found_and_nothing_is_posted(http, tenant, other_tenant):
    chatting = Chatting(http, tenant)
    theirs = uploaded(http, other_tenant.operator, "theirs.pdf", PDF)
    refused = post_reply(http, tenant, chatting.conversation_id, [theirs["_id"]], content="look")
    assert refused.status_code == 404 and refused.headers["content-type"] == "application/problem+json"
    assert http.get(f"/api/attachments/{theirs['_id']}", headers=tenant.operator).status_code == 404
    assert http.get("/api/messages", headers=tenant.operator,
                    params={"conversationId": chatting.conversation_id}).json() == []


def test_a_visitor_cannot_attach_anyone_elses_upload(http, tenant):
    chatting, other = Chatting(http, tenant), Chatting(http, tenant)
    operators = uploaded(http, tenant.operator, "a.pdf", PDF)
    others = uploaded(http, other.headers, "b.pdf", PDF, path="/api/chat/attachments")
    for foreign in (operators, others):
        refused = http.post("/api/chat/messages", headers=chatting.headers, json={
            "conversationId": chatting.conversation_id, "content": "", "attachmentIds": [foreign["_id"]]})
        assert refused.status_code == 404, refused.text
        assert http.get(f"/api/chat/attachments/{foreign['_id']}", headers=chatting.headers).status_code == 404


def test_an_internal_notes_file_never_reaches_the_visitor(http, tenant):
    chatting = Chatting(http, tenant)
    secret = uploaded(http, tenant.operator, "notes.txt", b"the customer is on the naughty list\n")
    note = post_reply(http, tenant, chatting.conversation_id, [secret["_id"]], internal=True)
    assert note.status_code == 200, note.text
    assert http.get(f"/api/attachments/{secret['_id']}", headers=tenant.operator).status_code == 200
    assert http.get(f"/api/chat/attachments/{secret['_id']}", headers=chatting.headers).status_code == 404
    assert http.get("/api/chat/messages", headers=chatting.headers,
                    params={"conversationId": chatting.conversation_id}).json() == []


@pytest.mark.parametrize("name, data", [
    ("page.html", b"<!DOCTYPE html><html><script>alert(1)</script></html>"),
    ("page.txt", b"  <html><body onload=alert(1)>"),
    ("logo.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    ("logo.png", b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'),
    ("photo.png", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + b"\x00" * 200),  # a renamed .exe
    ("tool.pdf", b"\x7fELF\x02\x01\x01" + b"\x00" * 200),
])
def test_markup_and_executables_are_refused_by_their_content(http, tenant, name, data):
    refused = upload(http, tenant.operator, name, data, content_type="image/png")
    assert refused.status_code == 415, refused.text
    assert refused.headers["content-type"] == "application/problem+json"


def test_a_file_name_keeps_no_path(http, tenant, server):
    sent = uploaded(http, tenant.operator, "../../../etc/passwd.txt", b"root:x:0:0\n")
    assert sent["name"] == "passwd.txt"
    windows = uploaded(http, tenant.operator, "..\\..\\boot.ini", b"[boot]\n")
    assert windows["name"] == "boot.ini"
    stored = [p for p in (server.data_dir / "attachments").rglob("*") if p.is_file()]
    assert stored and all(p.parent.parent.name == "sha256" for p in stored if "staging" not in p.parts)
    assert not any("passwd" in p.name for p in stored)


def test_a_text_file_is_a_download_never_a_page(http, tenant):
    chatting = Chatting(http, tenant)
    sent = uploaded(http, tenant.operator, "readme.txt", b"just text <b>not bold</b>\n")
    posted = post_reply(http, tenant, chatting.conversation_id, [sent["_id"]])
    served = fetch(http, posted.json()["attachments"][0]["url"])
    assert served.headers["content-type"].startswith("text/plain")
    assert served.headers["content-disposition"].startswith("attachment;")
    assert served.headers["x-content-type-options"] == "nosniff"


def test_an_altered_or_expired_link_is_not_found(http, tenant):
    chatting = Chatting(http, tenant)
    sent = uploaded(http, tenant.operator, "a.pdf", PDF)
    url = post_reply(http, tenant, chatting.conversation_id, [sent["_id"]]).json()["attachments"][0]["url"]
    assert fetch(http, url).status_code == 200
    parts = urlsplit(url)
    query = dict(pair.split("=", 1) for pair in parts.query.split("&"))
    later = str(int(query["expires"]) + 600)
    for path, params in ((parts.path, {**query, "expires": later}),
                         (parts.path, {**query, "signature": query["signature"][:-2] + "AA"}),
                         (parts.path.replace("/content", "/thumbnail"), query),
                         (parts.path, {"expires": "1", "signature": query["signature"]})):
        assert http.get(path, params=params).status_code == 404, (path, params)


def test_a_message_needs_content_or_an_attachment(http, tenant):
    chatting = Chatting(http, tenant)
    refused = post_reply(http, tenant, chatting.conversation_id, [])
    assert refused.status_code == 400, refused.text
    assert http.post("/api/messages", headers=tenant.operator, json={
        "conversationId": chatting.conversation_id, "content": "", "from": "operator",
        "attachmentIds": [str(uuid.uuid4())]}).status_code == 404


def raw_request(server, head: str, body_chunks, read_timeout: float = 10) -> bytes:
    """Sends a request by hand (a body bigger than it claims, or never finished) and reads the answer's first
    bytes; the server may close the connection while the body is still being sent."""
    host, port = urlsplit(server.base_url).hostname, urlsplit(server.base_url).port
    with socket.create_connection((host, port), timeout=read_timeout) as sock:
        sock.sendall(head.encode())
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return sock.recv(4096)


def test_a_2_gb_body_is_refused_before_it_is_read_and_memory_stays_flat(server, tenant):
    process = psutil.Process(server.proc.pid)
    before = process.memory_info().rss
    started = time.monotonic()
    boundary = "x" * 16
    answer = raw_request(server, (
        "POST /api/attachments HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Token {tenant.operator_token}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {2 * 1024 ** 3}\r\n\r\n"),
        [f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n\r\n".encode(),
         b"\0" * 65536])
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert time.monotonic() - started < 5
    assert process.memory_info().rss - before < 50 * 1024 * 1024


def test_a_chunked_body_is_refused_as_it_passes_the_limit(server, tenant):
    process = psutil.Process(server.proc.pid)
    before = process.memory_info().rss
    boundary = "y" * 16
    opening = f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n\r\n%PDF-1.4\n"
    megabyte = b"0" * (1024 * 1024)

    def chunked():
        yield b"%x\r\n%s\r\n" % (len(opening), opening.encode())
        for _ in range(200):  # 200 MiB, far past the 25 MiB limit: refused long before the end
            yield b"%x\r\n%s\r\n" % (len(megabyte), megabyte)

    answer = raw_request(server, (
        "POST /api/attachments HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Token {tenant.operator_token}\r\nTransfer-Encoding: chunked\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n"), chunked(), read_timeout=60)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert process.memory_info().rss - before < 80 * 1024 * 1024
    staging = server.data_dir / "attachments" / "staging"
    assert not list(staging.glob("upload-*"))  # what was staged of it is gone


def test_an_upload_never_attached_is_removed_and_an_attached_one_kept(server, http, tenant):
    chatting = Chatting(http, tenant)
    kept_bytes, abandoned_bytes = (f"{what} {uuid.uuid4()}\n".encode() for what in ("kept", "abandoned"))
    kept = uploaded(http, tenant.operator, "kept.txt", kept_bytes)
    abandoned = uploaded(http, tenant.operator, "abandoned.txt", abandoned_bytes)
    url = post_reply(http, tenant, chatting.conversation_id, [kept["_id"]]).json()["attachments"][0]["url"]

    def stored(data: bytes) -> bool:
        digest = hashlib.sha256(data).hexdigest()
        return (server.data_dir / "attachments" / "sha256" / digest[:2] / digest).exists()
    assert stored(kept_bytes) and stored(abandoned_bytes)

    store = EventStore(server.database_url, pool_size=1)
    try:
        sweeper = Sweeper(store, server.database_url, LocalBlobs(server.data_dir / "attachments"))
        assert asyncio.run(sweeper.sweep(datetime.now(timezone.utc))) == 0  # a day has not passed
        assert asyncio.run(sweeper.sweep(datetime.now(timezone.utc) + timedelta(days=2))) >= 1
        removed = [r.event for r in store.load(uuid.UUID(abandoned["_id"]))]
    finally:
        store.close()
    assert isinstance(removed[-1], ev.AttachmentRemoved) and removed[-1].reason == "abandoned"
    assert stored(kept_bytes) and not stored(abandoned_bytes)
    assert http.get(f"/api/attachments/{abandoned['_id']}", headers=tenant.operator).status_code == 404
    assert fetch(http, url).status_code == 200


def test_the_team_sees_attachments_in_the_realtime_feed(server, http, tenant):
    chatting = Chatting(http, tenant)
    with EventStream(server.base_url, "/api/realtime", tenant.operator) as feed:
        sent = uploaded(http, chatting.headers, "screen.png", png_bytes(), path="/api/chat/attachments")
        http.post("/api/chat/messages", headers=chatting.headers, json={
            "conversationId": chatting.conversation_id, "content": "", "attachmentIds": [sent["_id"]]})
        frame = feed.until(lambda pushed: pushed.event == "message.created")[-1].data
    [attachment] = frame["attachments"]
    assert attachment["_id"] == sent["_id"] and attachment["thumbnailUrl"].startswith(server.base_url)
    assert fetch(http, attachment["thumbnailUrl"]).status_code == 200


def test_parley_reply_attach_sends_files_the_visitor_downloads(server, http, tenant, tmp_path):
    chatting = Chatting(http, tenant)
    home = tmp_path / "home"
    profile = home / ".config" / "parley" / "profiles" / "default.json"
    profile.parent.mkdir(parents=True)
    profile.write_text(json.dumps({"url": server.base_url, "token": tenant.operator_token}))
    invoice, chart = tmp_path / "invoice.pdf", tmp_path / "chart.png"
    invoice.write_bytes(PDF)
    chart.write_bytes(png_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))

    def parley(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "parley.cli", *args], env=env, capture_output=True, text=True,
                              timeout=120)

    sent = parley("reply", chatting.conversation_id, "--attach", str(invoice), "--attach", str(chart), "--json")
    assert sent.returncode == 0, sent.stderr
    assert [a["name"] for a in json.loads(sent.stdout)["attachments"]] == ["invoice.pdf", "chart.png"]
    [message] = http.get("/api/chat/messages", headers=chatting.headers,
                         params={"conversationId": chatting.conversation_id}).json()
    assert fetch(http, message["attachments"][0]["url"]).content == PDF
    assert "[file: invoice.pdf" in parley("conversation", chatting.conversation_id).stdout
    refused = parley("reply", chatting.conversation_id, "--attach", str(tmp_path / "missing.pdf"))
    assert refused.returncode == 1 and "cannot read" in refused.stderr


@pytest.fixture(scope="module")
def hooks_server(infra, tmp_path_factory):
    running = make_server(infra, tmp_path_factory.mktemp("attachment-hooks"), PARLEY_WEBHOOK_ALLOW_PRIVATE="1").start()
    yield running
    running.stop()


def test_a_webhook_carries_the_attachments_with_links_that_download(hooks_server):
    tenant = make_tenant(hooks_server)
    with hooks_server.client() as http, Receiver() as receiver:
        subscribed = http.post("/api/webhooksubscriptions", headers=tenant.operator, json={
            "websiteId": str(tenant.website_id), "url": receiver.url, "events": ["message.created"]})
        assert subscribed.status_code == 200, subscribed.text
        chatting = Chatting(http, tenant)
        sent = uploaded(http, chatting.headers, "receipt.pdf", PDF, path="/api/chat/attachments")
        said = http.post("/api/chat/messages", headers=chatting.headers, json={
            "conversationId": chatting.conversation_id, "content": "my receipt", "attachmentIds": [sent["_id"]]})
        assert said.status_code == 200, said.text
        [delivered] = receiver.wait_for(1)
        [attachment] = json.loads(delivered.body)["data"]["attachments"]
        assert (attachment["name"], attachment["contentType"], attachment["size"]) == ("receipt.pdf",
                                                                                          "application/pdf", len(PDF))
        # the workers process made the link: it names where the API listens
        assert fetch(http, attachment["url"]).content == PDF
