"""The pet artwork format the mascot draws (contract: "Pet artwork rules"), and its validator.

One atlas of 8 columns x 11 rows of 192x208 cells (1536x2288), transparent PNG or lossless WebP, with the
numbers of web/pets/atlas.json. Rows 0-8 are the states, each with its frame count (the open "pets"
format's convention, which mascot.js plays); rows 9-10 hold 16 look directions, clockwise from up in
22.5-degree steps. Every cell past a row's frames is fully transparent. The manifest, pet.json, names the
atlas and says spriteVersionNumber 2.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

# The format's numbers live in one data file that the browser reads too (mascot.js, the dashboard).
ATLAS_FORMAT_FILE = Path(__file__).resolve().parents[1] / "web" / "pets" / "atlas.json"
ATLAS_FORMAT = json.loads(ATLAS_FORMAT_FILE.read_text())

COLUMNS, ROWS = ATLAS_FORMAT["columns"], ATLAS_FORMAT["rows"]
CELL_WIDTH, CELL_HEIGHT = ATLAS_FORMAT["cellWidth"], ATLAS_FORMAT["cellHeight"]
WIDTH, HEIGHT = COLUMNS * CELL_WIDTH, ROWS * CELL_HEIGHT
# (state, frames) by row
STATES = tuple((name, state["frames"])
               for name, state in sorted(ATLAS_FORMAT["states"].items(), key=lambda item: item[1]["row"]))
LOOK_ROWS = tuple(ATLAS_FORMAT["lookRows"])
MANIFEST_FIELDS = tuple(ATLAS_FORMAT["manifestFields"])
SPRITE_VERSION = ATLAS_FORMAT["spriteVersionNumber"]


def frames_in_row(row: int) -> int:
    return STATES[row][1] if row < len(STATES) else COLUMNS


def _lossless_webp(data: bytes) -> bool:
    """Whether the WebP's image chunk is VP8L (lossless) rather than VP8 (lossy): RIFF chunks after the
    12-byte header, each a fourcc, a little-endian size and the payload padded to even length."""
    offset = 12
    while offset + 8 <= len(data):
        kind, size = data[offset:offset + 4], int.from_bytes(data[offset + 4:offset + 8], "little")
        if kind in (b"VP8L", b"VP8 "):
            return kind == b"VP8L"
        offset += 8 + size + (size & 1)
    return False


# What `POST /api/pets/validate` accepts: far above any real atlas's file (a drawn 1536x2288 PNG is a few
# hundred KB), and small enough to hold in memory per request.
MAX_ATLAS_BYTES = 8 * 1024 * 1024
MEDIA_TYPES = ("image/png", "image/webp")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def looks_like_atlas_file(data: bytes) -> bool:
    """Whether the bytes start as a PNG or a WebP file does (whatever follows)."""
    return data.startswith(PNG_SIGNATURE) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def validate(path: Path) -> list[str]:
    """Every rule the atlas (and its manifest, when `path` is a pet.json) breaks, one sentence each."""
    failures: list[str] = []
    atlas = path
    if path.suffix.lower() == ".json":
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            return [f"{path}: not a readable JSON manifest ({exc})"]
        if not isinstance(manifest, dict):
            return [f"{path}: the manifest is not a JSON object"]
        failures += [f"manifest: {name} is missing" for name in MANIFEST_FIELDS if name not in manifest]
        if manifest.get("spriteVersionNumber", SPRITE_VERSION) != SPRITE_VERSION:
            failures.append(f"manifest: spriteVersionNumber is {manifest['spriteVersionNumber']!r}, not {SPRITE_VERSION}")
        sheet = manifest.get("spritesheetPath")
        if not isinstance(sheet, str):
            return failures + ["manifest: spritesheetPath does not name the atlas"]
        atlas = path.parent / sheet
    try:
        data = atlas.read_bytes()
    except OSError as exc:
        return failures + [f"{atlas}: not readable ({exc.strerror})"]
    return failures + validate_atlas(data, str(atlas))


def validate_atlas(data: bytes, name: str = "atlas") -> list[str]:
    """Every rule the atlas `data` breaks, one sentence each; `name` says which file was unreadable.

    The bytes may come from anyone (`POST /api/pets/validate`): the header is read first, and pixels are
    decoded only for an image no larger than an atlas, so a small file cannot expand into a huge one."""
    from PIL import Image, UnidentifiedImageError

    failures: list[str] = []
    try:
        image = Image.open(io.BytesIO(data))
    except UnidentifiedImageError:
        return [f"{name}: not a readable image"]
    except Exception as exc:  # noqa: BLE001 - a malformed file may make any decoder raise anything
        return [f"{name}: not a readable image ({exc})"]
    if image.format not in ("PNG", "WEBP"):
        failures.append(f"atlas: {image.format} is neither PNG nor WebP")
    elif image.format == "WEBP" and not _lossless_webp(data):
        failures.append("atlas: the WebP is lossy; it must be lossless")
    width, height = image.size
    if (width, height) != (WIDTH, HEIGHT):
        failures.append(f"atlas: {width}x{height} pixels, not {WIDTH}x{HEIGHT} "
                        f"({COLUMNS} columns x {ROWS} rows of {CELL_WIDTH}x{CELL_HEIGHT} cells)")
    if image.mode not in ("RGBA", "LA") and not (image.mode == "P" and "transparency" in image.info):
        return failures + [f"atlas: mode {image.mode} has no alpha channel; it must be RGBA"]
    if width * height > WIDTH * HEIGHT:
        return failures  # too big to decode for an answer the size rule has given already
    try:
        image.load()
    except Exception as exc:  # noqa: BLE001 - as above: a truncated or corrupt image
        return failures + [f"{name}: not a readable image ({exc})"]
    alpha = image.convert("RGBA").getchannel("A")
    if alpha.getextrema()[0] == 255:
        failures.append("atlas: no pixel is transparent; the background must be")
    if image.size != (WIDTH, HEIGHT):
        return failures
    for row in range(ROWS):
        used = frames_in_row(row)
        for column in range(COLUMNS):
            box = (column * CELL_WIDTH, row * CELL_HEIGHT, (column + 1) * CELL_WIDTH, (row + 1) * CELL_HEIGHT)
            empty = alpha.crop(box).getextrema()[1] == 0
            label = STATES[row][0] if row < len(STATES) else "look"
            if column >= used and not empty:
                failures.append(f"atlas: row {row} ({label}) column {column} is past its {used} frames "
                                "and must be fully transparent")
            elif column < used and empty:
                failures.append(f"atlas: row {row} ({label}) frame {column} is empty")
    return failures
