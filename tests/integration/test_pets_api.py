"""`POST /api/pets/validate`: the dashboard's pet validator, over real HTTP against the running server. The
verdict is the one `parley pets validate` gives; refusals are problem+json; nothing is ever stored."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from commands.pets import HEIGHT, MAX_ATLAS_BYTES, WIDTH, validate

DEFAULT_ATLAS = Path(__file__).resolve().parents[2] / "web" / "pets" / "default" / "spritesheet.png"
PATH = "/api/pets/validate"


@pytest.fixture
def nothing_stored(server, tenant):
    """Fails the test when the event store moved while it ran."""
    def head() -> int:
        store = server.store()
        try:
            return store.head()
        finally:
            store.close()
    before = head()
    yield
    assert head() == before


@pytest.fixture
def api_key(tenant) -> dict[str, str]:
    return tenant.key()


def send(http, tenant, data: bytes, media_type: str = "image/png", **headers):
    return http.post(PATH, content=data, headers={"Content-Type": media_type, **tenant.operator, **headers})


def encoded(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def default_atlas() -> Image.Image:
    return Image.open(DEFAULT_ATLAS).convert("RGBA")


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that announces `width`x`height` RGBA pixels but holds one junk data chunk: only a validator
    that decodes the pixels notices the junk."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"junk") + chunk(b"IEND", b"")


def test_the_default_pet_is_valid(http, tenant, nothing_stored):
    answer = send(http, tenant, DEFAULT_ATLAS.read_bytes())
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {"valid": True, "failures": []}


@pytest.mark.parametrize("name,data,media_type,expected", [
    ("wrong size", lambda: encoded(default_atlas().resize((WIDTH // 2, HEIGHT // 2))), "image/png",
     "atlas: 768x1144 pixels, not 1536x2288"),
    ("opaque", lambda: encoded(default_atlas().convert("RGB")), "image/png", "atlas: mode RGB has no alpha channel"),
    ("lossy", lambda: encoded(default_atlas(), "WEBP", lossless=False), "image/webp",
     "atlas: the WebP is lossy; it must be lossless"),
    ("corrupt", lambda: b"\x89PNG\r\n\x1a\n" + b"not really", "image/png", "atlas: not a readable image"),
])
def test_a_broken_atlas_is_invalid_with_the_cli_s_sentence(http, tenant, nothing_stored, tmp_path, name, data,
                                                           media_type, expected):
    body = data()
    answer = send(http, tenant, body, media_type)
    assert answer.status_code == 200, answer.text
    verdict = answer.json()
    assert verdict["valid"] is False
    assert sum(line.startswith(expected) for line in verdict["failures"]) == 1, verdict
    # the very sentences `parley pets validate` prints for the same file
    path = tmp_path / "atlas"
    path.write_bytes(body)
    assert verdict["failures"] == [line.replace(str(path), "atlas") for line in validate(path)]


def test_an_oversized_image_is_judged_by_its_header_without_decoding(http, tenant, nothing_stored):
    # 6000x6000 RGBA would be 144 MB decoded; the junk pixel data would fail a decode
    answer = send(http, tenant, png_header_only(6000, 6000))
    assert answer.json() == {"valid": False, "failures": [
        "atlas: 6000x6000 pixels, not 1536x2288 (8 columns x 11 rows of 192x208 cells)"]}


def test_bytes_that_are_no_png_or_webp_are_refused(http, tenant, nothing_stored):
    for body in (b"GIF89a" + b"\x00" * 40, b"hello", b"", encoded(default_atlas().convert("RGB"), "JPEG")):
        answer = send(http, tenant, body)
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["detail"] == "the body is not a PNG or WebP file"


def test_another_content_type_is_415(http, tenant, nothing_stored):
    for media_type in ("application/json", "image/gif", "multipart/form-data; boundary=x"):
        answer = send(http, tenant, DEFAULT_ATLAS.read_bytes(), media_type)
        assert answer.status_code == 415, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["field"] == "Content-Type"
    assert send(http, tenant, DEFAULT_ATLAS.read_bytes(), "Image/PNG; charset=binary").status_code == 200


def test_a_body_over_the_cap_is_413(http, tenant, nothing_stored):
    body = b"\x89PNG\r\n\x1a\n" + b"\x00" * MAX_ATLAS_BYTES
    answer = send(http, tenant, body)
    assert answer.status_code == 413, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["status"] == 413
    # at the cap exactly it is read and judged
    assert send(http, tenant, body[:MAX_ATLAS_BYTES]).status_code == 200


def test_only_an_operator_may_validate(http, tenant, api_key, nothing_stored):
    body = DEFAULT_ATLAS.read_bytes()
    answer = http.post(PATH, content=body, headers={"Content-Type": "image/png"})
    assert answer.status_code == 401
    assert "Token" in answer.headers["www-authenticate"]
    assert http.post(PATH, content=body, headers={"Content-Type": "image/png", "Authorization": "Token nope"}
                     ).status_code == 401
    assert send(http, tenant, body, **api_key).status_code == 403
