"""Draws Parley's default pet, "Pip", a round speech-bubble creature, into web/pets/default/.

Deterministic: the same Pillow draws the same bytes, so anyone can regenerate and diff the artwork:
    python web/pets/draw_default.py
Every frame is drawn from a few numbers (a bounce, a lean, the arms, the eyes), so the states read
clearly at the mascot's size; the layout is the one commands/pets.py validates.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from commands.pets import CELL_HEIGHT, CELL_WIDTH, COLUMNS, HEIGHT, LOOK_ROWS, SPRITE_VERSION, STATES, WIDTH  # noqa: E402

OUT = Path(__file__).resolve().parent / "default"
SCALE = 2  # drawn at twice the size, then reduced: smooth edges
BODY, SHADE, BELLY, INK, CHEEK = (94, 92, 230), (70, 66, 190), (236, 236, 255), (30, 30, 52), (255, 150, 170)


def frame(draw: ImageDraw.ImageDraw, *, bounce=0.0, lean=0.0, arm_l=0.0, arm_r=0.0, legs=0.0, eyes="open",
          look=(0.0, 0.0), mouth="smile", prop=None, phase=0.0) -> None:
    """One pose in a cell's coordinates (scaled): the body's centre moves with `bounce` and `lean`."""
    s = SCALE
    cx, cy = (96 + lean * 10) * s, (116 - bounce) * s
    # shadow on the ground, smaller while in the air
    spread = max(18.0, 46 - bounce * 0.6) * s
    draw.ellipse((96 * s - spread, 196 * s, 96 * s + spread, 204 * s), fill=(0, 0, 0, 60))
    # legs
    for side, swing in ((-1, legs), (1, -legs)):
        x = cx + side * 22 * s + swing * 8 * s
        draw.rounded_rectangle((x - 9 * s, cy + 44 * s, x + 9 * s, cy + 72 * s - abs(swing) * 4 * s), 8 * s, fill=SHADE)
    # arms: an angle in degrees, 0 hanging down, 180 straight up
    for side, angle in ((-1, arm_l), (1, arm_r)):
        shoulder = (cx + side * 50 * s, cy + 4 * s)
        rad = math.radians(angle)
        hand = (shoulder[0] + side * math.sin(rad) * 34 * s, shoulder[1] + math.cos(rad) * 34 * s)
        draw.line((shoulder, hand), fill=SHADE, width=12 * s)
        draw.ellipse((hand[0] - 9 * s, hand[1] - 9 * s, hand[0] + 9 * s, hand[1] + 9 * s), fill=SHADE)
    # the body: a speech bubble with its tail
    draw.polygon(((cx - 34 * s, cy + 40 * s), (cx - 52 * s, cy + 62 * s), (cx - 10 * s, cy + 48 * s)), fill=BODY)
    draw.ellipse((cx - 58 * s, cy - 56 * s, cx + 58 * s, cy + 54 * s), fill=BODY)
    draw.ellipse((cx - 36 * s, cy + 2 * s, cx + 36 * s, cy + 46 * s), fill=BELLY)
    draw.ellipse((cx - 44 * s, cy - 46 * s, cx - 18 * s, cy - 30 * s), fill=(150, 148, 255))  # shine
    # face
    ex, ey = cx, cy - 14 * s
    for side in (-1, 1):
        x = ex + side * 20 * s
        if eyes == "closed":
            draw.arc((x - 10 * s, ey - 6 * s, x + 10 * s, ey + 8 * s), 200, 340, fill=INK, width=4 * s)
        elif eyes == "x":
            draw.line((x - 8 * s, ey - 8 * s, x + 8 * s, ey + 8 * s), fill=INK, width=4 * s)
            draw.line((x - 8 * s, ey + 8 * s, x + 8 * s, ey - 8 * s), fill=INK, width=4 * s)
        else:
            draw.ellipse((x - 12 * s, ey - 13 * s, x + 12 * s, ey + 13 * s), fill=(255, 255, 255))
            px, py = x + look[0] * 5 * s, ey + look[1] * 6 * s
            draw.ellipse((px - 6 * s, py - 7 * s, px + 6 * s, py + 7 * s), fill=INK)
            draw.ellipse((px - 2 * s, py - 5 * s, px + 1 * s, py - 2 * s), fill=(255, 255, 255))
        draw.ellipse((x - 6 * s + side * 8 * s, ey + 14 * s, x + 6 * s + side * 8 * s, ey + 20 * s), fill=CHEEK)
    my = ey + 24 * s
    if mouth == "smile":
        draw.arc((cx - 12 * s, my - 10 * s, cx + 12 * s, my + 6 * s), 20, 160, fill=INK, width=4 * s)
    elif mouth == "open":
        draw.ellipse((cx - 8 * s, my - 6 * s, cx + 8 * s, my + 8 * s), fill=INK)
    elif mouth == "sad":
        draw.arc((cx - 12 * s, my, cx + 12 * s, my + 14 * s), 200, 340, fill=INK, width=4 * s)
    else:
        draw.line((cx - 8 * s, my, cx + 8 * s, my), fill=INK, width=4 * s)
    if prop == "dots":  # busy: three dots in a bubble above its head, one lit after the other
        draw.rounded_rectangle((cx - 34 * s, cy - 100 * s, cx + 34 * s, cy - 70 * s), 14 * s, fill=(255, 255, 255),
                               outline=SHADE, width=3 * s)
        for i in range(3):
            shade = INK if i == int(phase) % 3 else (180, 180, 200)
            draw.ellipse((cx + (i - 1) * 18 * s - 5 * s, cy - 90 * s, cx + (i - 1) * 18 * s + 5 * s, cy - 80 * s), fill=shade)
    elif prop == "page":  # review: a help page held up
        draw.rounded_rectangle((cx + 30 * s, cy - 10 * s, cx + 74 * s, cy + 44 * s), 4 * s, fill=(255, 255, 255),
                               outline=SHADE, width=3 * s)
        for i in range(4):
            draw.line((cx + 38 * s, cy + (2 + i * 10) * s, cx + 66 * s, cy + (2 + i * 10) * s), fill=(160, 160, 200), width=2 * s)
    elif prop == "clock":  # waiting: a small clock whose hand turns
        draw.ellipse((cx + 40 * s, cy - 86 * s, cx + 72 * s, cy - 54 * s), fill=(255, 255, 255), outline=SHADE, width=3 * s)
        rad = math.radians(phase * 60)
        draw.line((cx + 56 * s, cy - 70 * s, cx + 56 * s + math.sin(rad) * 11 * s, cy - 70 * s - math.cos(rad) * 11 * s),
                  fill=INK, width=3 * s)


def poses(state: str, n: int, i: int) -> dict:
    t = i / n
    wave = math.sin(t * 2 * math.pi)
    if state == "idle":
        return dict(bounce=3 * wave, eyes="closed" if i == n - 1 else "open")
    if state in ("running-right", "running-left"):
        side = 1 if state == "running-right" else -1
        return dict(bounce=4 * abs(wave), lean=side, legs=wave, arm_l=40 * -wave, arm_r=40 * wave,
                    look=(side, 0), mouth="open")
    if state == "waving":
        return dict(arm_r=150 + 25 * (-1) ** i, mouth="open" if i % 2 else "smile")
    if state == "jumping":
        return dict(bounce=(0, 30, 52, 30, 0)[i], arm_l=(20, 140, 160, 140, 20)[i], arm_r=(20, 140, 160, 140, 20)[i],
                    legs=0.0, mouth="open")
    if state == "failed":
        return dict(bounce=-(i * 1.5), lean=0.3 * math.sin(i), eyes="x" if i >= 2 else "open", mouth="sad",
                    arm_l=10, arm_r=10)
    if state == "waiting":
        return dict(bounce=1.5 * wave, look=(0.6 * wave, -0.6), mouth="flat", prop="clock", phase=i)
    if state == "running":
        return dict(bounce=2 * abs(wave), arm_l=60 + 30 * wave, arm_r=60 - 30 * wave, look=(0, -1), mouth="flat",
                    prop="dots", phase=i)
    if state == "review":
        return dict(arm_r=110, look=(0.9, 0.2), prop="page", mouth="smile" if i < n - 1 else "open", bounce=wave)
    raise ValueError(state)


def cell(pose: dict) -> Image.Image:
    big = Image.new("RGBA", (CELL_WIDTH * SCALE, CELL_HEIGHT * SCALE), (0, 0, 0, 0))
    frame(ImageDraw.Draw(big), **pose)
    return big.resize((CELL_WIDTH, CELL_HEIGHT), Image.Resampling.LANCZOS)


def atlas() -> Image.Image:
    sheet = Image.new("RGBA", (WIDTH, HEIGHT), (0, 0, 0, 0))
    for row, (state, frames) in enumerate(STATES):
        for i in range(frames):
            sheet.paste(cell(poses(state, frames, i)), (i * CELL_WIDTH, row * CELL_HEIGHT))
    for direction in range(16):  # clockwise from up: the pupils follow, the body leans a little
        rad = math.radians(direction * 22.5)
        look = (math.sin(rad), -math.cos(rad))
        pose = dict(look=look, lean=0.4 * look[0], bounce=2 * -look[1])
        sheet.paste(cell(pose), ((direction % COLUMNS) * CELL_WIDTH, LOOK_ROWS[direction // COLUMNS] * CELL_HEIGHT))
    return sheet


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    atlas().save(OUT / "spritesheet.png", optimize=True)
    manifest = {"id": "default", "displayName": "Pip", "description": "Parley's own pet: a round speech bubble "
                "that waves, waits, works on replies and jumps when one arrives.", "spriteVersionNumber": SPRITE_VERSION,
                "spritesheetPath": "spritesheet.png"}
    (OUT / "pet.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
