"""Who of the team wrote a reply, as visitors, the dashboard, realtime and MCP see it: the operator's id,
display name and avatar, never the e-mail address (planted as a canary); avatars uploaded are re-encoded
without their metadata, anything but an image is refused, and initials stand in for a missing avatar."""

from __future__ import annotations

import asyncio
import io
import uuid

import httpx
from PIL import Image

from tests.support.mcp_helpers import Consent, mcp_session
from tests.support.visitors import EventStream, visitor_with_conversation


def named_operator(http: httpx.Client, tenant, name: str):
    colleague = tenant.add_operator("agent")  # its e-mail address is the canary: a random one of its own
    renamed = http.patch("/api/operators/me", headers=colleague.headers, json={"displayName": name})
    assert renamed.status_code == 200, renamed.text
    return colleague


def reply(http: httpx.Client, headers: dict, conversation_id: str, content: str, internal: bool = False) -> dict:
    posted = http.post("/api/messages", headers=headers, json={
        "conversationId": conversation_id, "content": content, "from": "operator", "internal": internal})
    assert posted.status_code == 200, posted.text
    return posted.json()


def jpeg_with_gps() -> bytes:
    image = Image.new("RGB", (600, 400), (200, 30, 30))
    exif = Image.Exif()
    exif[0x010F] = "CanaryCam"  # the camera's make
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)}  # where it was taken
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif.tobytes())
    data = out.getvalue()
    assert b"CanaryCam" in data and Image.open(io.BytesIO(data)).getexif().get_ifd(0x8825)
    return data


def test_a_reply_shows_its_authors_name_to_the_visitor_and_a_note_its_author_to_the_team(server, http, tenant):
    ada = named_operator(http, tenant, "Ada Lovelace")
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    with EventStream(server.base_url, "/api/chat/realtime", visitor.headers) as pushed:
        answered = reply(http, ada.headers, conversation_id, "Hello, I am Ada")
        frame = pushed.until(lambda p: p.event == "message.created" and p.data["_id"] == answered["_id"])[-1]
    note = reply(http, ada.headers, conversation_id, "a note for the team", internal=True)
    by_key = reply(http, tenant.key(), conversation_id, "from the team's API key")
    expected = {"operatorId": str(ada.id), "displayName": "Ada Lovelace"}

    assert {k: answered["operator"][k] for k in expected} == expected
    assert answered["from"] == "operator" and answered["author"] == "operator"
    assert {k: frame.data["operator"][k] for k in expected} == expected
    transcript = http.get("/api/chat/messages", headers=visitor.headers, params={"conversationId": conversation_id})
    shown = {m["_id"]: m for m in transcript.json()}
    assert {k: shown[answered["_id"]]["operator"][k] for k in expected} == expected
    assert note["_id"] not in shown and shown[by_key["_id"]]["operator"] is None
    assert ada.email not in transcript.text and ada.email not in str(frame.data)

    listed = {m["_id"]: m for m in http.get("/api/messages", headers=tenant.operator,
                                            params={"conversationId": conversation_id}).json()}
    assert listed[note["_id"]]["internal"] and listed[note["_id"]]["operator"]["displayName"] == "Ada Lovelace"
    assert listed[answered["_id"]]["operator"] == answered["operator"]
    assert listed[by_key["_id"]]["operator"] is None
    customer_says = http.post("/api/chat/messages", headers=visitor.headers,
                              json={"conversationId": conversation_id, "content": "thanks"}).json()
    assert customer_says["operator"] is None


def test_an_avatar_is_reencoded_without_its_metadata_and_served_as_an_image_only(http, tenant):
    ada = named_operator(http, tenant, "Ada Lovelace")
    uploaded = http.put("/api/operators/me/avatar", headers={**ada.headers, "Content-Type": "image/jpeg"},
                        content=jpeg_with_gps())
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json()["operatorId"] == str(ada.id)
    avatar_url = uploaded.json()["avatarUrl"]
    assert avatar_url.startswith(f"/api/operators/{ada.id}/avatar?v=")

    served = http.get(avatar_url)  # no credential: the widget fetches it from the visitor's page
    assert served.status_code == 200
    assert served.headers["content-type"] == "image/webp"
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'none'" in served.headers["content-security-policy"]
    assert "immutable" in served.headers["cache-control"]
    image = Image.open(io.BytesIO(served.content))
    assert image.format == "WEBP" and image.size == (128, 128)
    assert not image.getexif() and "exif" not in image.info and "icc_profile" not in image.info
    assert b"CanaryCam" not in served.content and b"Exif" not in served.content
    assert http.get(avatar_url, headers={"If-None-Match": served.headers["etag"]}).status_code == 304

    visitor, conversation_id = visitor_with_conversation(http, tenant)
    # the post's own answer too, though this process kept Ada's credential from before the upload
    assert reply(http, ada.headers, conversation_id, "with a face")["operator"]["avatarUrl"] == avatar_url
    [shown] = http.get("/api/chat/messages", headers=visitor.headers,
                       params={"conversationId": conversation_id}).json()
    assert shown["operator"]["avatarUrl"] == avatar_url

    removed = http.delete("/api/operators/me/avatar", headers=ada.headers)
    assert removed.status_code == 200 and removed.json()["avatarUrl"] != avatar_url
    assert reply(http, ada.headers, conversation_id, "faceless")["operator"]["avatarUrl"] == removed.json()["avatarUrl"]
    initials = http.get(removed.json()["avatarUrl"])
    assert initials.headers["content-type"].startswith("image/svg+xml")
    assert initials.headers["x-content-type-options"] == "nosniff"
    assert b">AL</text>" in initials.content


def test_anything_but_an_image_is_refused(http, tenant):
    for body, media_type in ((b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
                              "image/svg+xml"),
                             (b"GIF89a" + bytes(40), "image/gif"),
                             (b"%PDF-1.7 but called a PNG", "image/png")):
        refused = http.put("/api/operators/me/avatar", headers={**tenant.operator, "Content-Type": media_type},
                           content=body)
        assert refused.status_code == 415, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
    broken = http.put("/api/operators/me/avatar", headers=tenant.operator,
                      content=b"\x89PNG\r\n\x1a\n" + bytes(64))  # a PNG's signature, and nothing of an image
    assert broken.status_code == 400, broken.text
    assert http.put("/api/operators/me/avatar", headers=tenant.key(), content=jpeg_with_gps()).status_code == 403


def test_an_operator_without_an_avatar_is_shown_by_initials_drawn_by_the_service(http, tenant):
    ada = named_operator(http, tenant, "ada <lovelace>")
    served = http.get(f"/api/operators/{ada.id}/avatar")
    assert served.status_code == 200
    assert served.headers["content-type"].startswith("image/svg+xml")
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "immutable" not in served.headers["cache-control"]  # no version named: it may change
    assert b">AL</text>" in served.content and b"<lovelace" not in served.content
    assert http.get(f"/api/operators/{uuid.uuid4()}/avatar").status_code == 404


def test_mcp_results_never_carry_the_authors_email_address(server, http, tenant):
    ada = named_operator(http, tenant, "Ada Lovelace")
    visitor, conversation_id = visitor_with_conversation(http, tenant)
    http.post("/api/chat/messages", headers=visitor.headers, json={"conversationId": conversation_id,
                                                                   "content": "hello?"})
    reply(http, ada.headers, conversation_id, "Hello, I am Ada")
    reply(http, ada.headers, conversation_id, f"@{tenant.operator_email} have a look", internal=True)

    async def everything() -> list[str]:
        website = str(tenant.website_id)
        calls = [("list_conversations", {"websiteId": website}), ("show_inbox", {"websiteId": website}),
                 ("show_conversation_activity", {"websiteId": website, "days": 3}), ("get_workload_summary", {}),
                 ("send_operator_reply", {"conversationId": conversation_id, "content": "via MCP",
                                          "requestId": uuid.uuid4().hex})]
        async with mcp_session(server.base_url, Consent(server.base_url, ada.email)) as session:
            return [(await session.call_tool(name, arguments)).model_dump_json(by_alias=True)
                    for name, arguments in calls]

    for output in asyncio.run(everything()):
        assert ada.email not in output and str(ada.id) not in output, output[:300]
