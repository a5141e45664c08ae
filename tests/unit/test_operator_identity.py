"""Avatars without a server: what an upload becomes, what is refused, the initials drawn, the decisions."""

import io
import uuid
from datetime import datetime, timezone

import pytest
from PIL import Image

from commands.avatars import SIZE, UnsupportedImage, digest_of, reencoded
from commands.deciders.operator import decide_avatar, fold_operator
from commands.errors import Invalid
from events import types as ev
from events.store import Recorded
from projections.views.identities import identity, initials, initials_svg

ORG, AT = uuid.uuid4(), datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_an_upload_becomes_a_square_webp_of_its_pixels_only():
    exif = Image.Exif()
    exif[0x010F] = "CanaryCam"
    exif[0x0112] = 6  # taken sideways: turned upright before the crop
    out = io.BytesIO()
    Image.new("RGB", (400, 100), (10, 200, 10)).save(out, "JPEG", exif=exif.tobytes(), comment=b"CanaryComment")
    made = reencoded(out.getvalue())
    image = Image.open(io.BytesIO(made))
    assert image.format == "WEBP" and image.size == (SIZE, SIZE)
    assert b"Canary" not in made and not image.getexif()


@pytest.mark.parametrize("body", [b"", b"GIF89a....", b"<svg xmlns='http://www.w3.org/2000/svg'/>", b"BM" + bytes(60)])
def test_only_png_jpeg_and_webp_are_taken(body):
    with pytest.raises(UnsupportedImage):
        reencoded(body)


def test_a_file_that_only_starts_like_an_image_is_invalid():
    with pytest.raises(Invalid):
        reencoded(b"\xff\xd8\xff" + bytes(100))


def test_initials_are_drawn_from_the_name_as_text_only():
    assert initials("Ada Lovelace") == "AL" and initials("  grace  b.  hopper ") == "GH" and initials(None) == ""
    operator = uuid.uuid4()
    svg = initials_svg(operator, "<script> & Co")
    assert b"<script" not in svg and b">S&amp;C</text>" not in svg and b">SC</text>" in svg
    assert initials_svg(operator, "x") != initials_svg(uuid.uuid4(), "x")  # a colour of its own
    named, renamed = identity(operator, "Ada", None), identity(operator, "Ada L", None)
    assert named.avatar_url != renamed.avatar_url  # the initials changed: so does the address
    assert identity(operator, "Ada", "sha256:" + "ab" * 32).avatar_url.endswith("?v=" + "ab" * 8)


def test_an_avatar_is_set_once_per_image_and_removed_once():
    operator_id = uuid.uuid4()
    created = ev.OperatorCreated(org_id=ORG, at=AT, operator_id=operator_id, email="a@example.com", password_hash="h")
    operator = fold_operator([Recorded(1, operator_id, 1, created)])
    assert decide_avatar(operator, ORG, AT, None) == []
    [pending] = decide_avatar(operator, ORG, AT, ("image/webp", digest_of(b"img"), b"img"))
    assert isinstance(pending.event, ev.OperatorAvatarSet) and pending.version == 2
    operator = fold_operator([Recorded(1, operator_id, 1, created), Recorded(2, operator_id, 2, pending.event)])
    assert decide_avatar(operator, ORG, AT, ("image/webp", digest_of(b"img"), b"img")) == []
    [removed] = decide_avatar(operator, ORG, AT, None)
    assert isinstance(removed.event, ev.OperatorAvatarRemoved)
