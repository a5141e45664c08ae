"""Attachments in an S3-compatible object store (PARLEY_STORAGE_URL) — a real SeaweedFS on the loopback, not
a mock — shared by two API processes: a file uploaded through one is served by the other."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.attachments import gps_of, jpeg_with_gps, png_bytes, upload
from tests.support.seaweed import SeaweedS3
from tests.support.servers import Server, make_server, make_tenant
from tests.support.visitors import Chatting
from tests.integration.test_attachments import PDF, fetch, post_reply, uploaded


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory) -> Iterator[SeaweedS3]:
    started = SeaweedS3(tmp_path_factory.mktemp("seaweed")).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def api_pair(infra, seaweed, tmp_path_factory) -> Iterator[tuple[Server, Server]]:
    """`parley serve` (API and workers) and a second API process on the same database, stream and store."""
    first = make_server(infra, tmp_path_factory.mktemp("s3-first"), PARLEY_STORAGE_URL=seaweed.storage_url).start()
    second = Server(first.database_url, first.nats_url, dict(first.env), tmp_path_factory.mktemp("s3-second"))
    second.start("--role", "api")
    yield first, second
    second.stop()
    first.stop()


def test_a_file_uploaded_through_one_api_process_is_served_by_another(api_pair):
    first, second = api_pair
    tenant = make_tenant(first)
    with first.client() as one, second.client() as two:
        chatting = Chatting(one, tenant)
        sent = uploaded(one, tenant.operator, "invoice.pdf", PDF)
        picture = uploaded(one, tenant.operator, "chart.png", png_bytes((300, 200)))
        assert post_reply(one, tenant, chatting.conversation_id, [sent["_id"], picture["_id"]]).status_code == 200

        transcript = two.get("/api/chat/messages", headers=chatting.headers,
                             params={"conversationId": chatting.conversation_id})
        assert transcript.status_code == 200, transcript.text
        document, image = transcript.json()[0]["attachments"]
        assert document["url"].startswith(second.base_url)
        served = fetch(two, document["url"])
        assert served.status_code == 200 and served.content == PDF
        assert served.headers["content-disposition"].startswith("attachment;")
        assert fetch(two, image["thumbnailUrl"]).headers["content-type"] == "image/webp"

        # and the visitor's way, uploaded through the second, served by the first
        photo = uploaded(two, chatting.headers, "me.jpg", jpeg_with_gps(), path="/api/chat/attachments")
        said = two.post("/api/chat/messages", headers=chatting.headers, json={
            "conversationId": chatting.conversation_id, "content": "", "attachmentIds": [photo["_id"]]})
        assert said.status_code == 200, said.text
        listed = one.get("/api/messages", headers=tenant.operator,
                         params={"conversationId": chatting.conversation_id}).json()
        [attachment] = listed[-1]["attachments"]
        downloaded = fetch(one, attachment["url"])
        assert downloaded.status_code == 200 and gps_of(downloaded.content) == {}

    for server in api_pair:  # the bytes are in the object store, not in either data directory
        assert not list((server.data_dir / "attachments").glob("sha256/**/*"))


def test_the_object_store_refuses_what_the_embedded_one_refuses(api_pair):
    first, _ = api_pair
    tenant = make_tenant(first)
    with first.client() as http:
        assert upload(http, tenant.operator, "x.svg", b"<svg onload=alert(1)/>").status_code == 415
