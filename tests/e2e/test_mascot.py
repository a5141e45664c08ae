"""The mascot in a real Chromium on another origin: every state's row and frame timing, the look direction,
reduced motion, the fallback pet, both surfaces on one page; and `parley pets validate`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from tests.support.browser import browser, host_pages, page, screenshot  # noqa: F401 - fixtures
from tests.support.servers import make_tenant
from tests.support.widget_pages import Console, eventually, host_page

from commands.pets import CELL_HEIGHT, CELL_WIDTH, HEIGHT, STATES, WIDTH

PET = Path(__file__).resolve().parents[2] / "web" / "pets" / "default"
# what mascot.js plays (ms per frame; the last frame of every state is held 320 ms)
FRAME_MS = {"idle": 220, "running-right": 110, "running-left": 110, "waving": 170, "jumping": 130, "failed": 150,
            "waiting": 230, "running": 120, "review": 180}
LOOPS = {"idle", "running-right", "running-left", "waiting", "running"}
LAST_MS = 320
PET_SELECTOR = "[data-parley=mascot] .pet"


def mascot_page(page, host_pages, server, tenant, name, pet=None, scripts=("mascot.js",), queued=()):
    config = {"websiteId": str(tenant.website_id), "brandColor": "#0f766e",
              **({"pet": pet} if pet is not None else {})}
    page.goto(host_page(host_pages, name, server.base_url, tenant.website_id, scripts=scripts, queued=queued,
                        extra=f"window.PARLEY_MASCOT = {json.dumps(config)};", body="<main style='height:900px'></main>"))
    page.locator(PET_SELECTOR).wait_for()


def at_rest(page):
    eventually(lambda: page.locator(PET_SELECTOR).get_attribute("data-state") == "idle")


RECORD = """(state) => new Promise(resolve => {
  const host = document.querySelector('[data-parley=mascot]'), pet = host.shadowRoot.querySelector('.pet');
  const seen = [];
  const note = () => seen.push([pet.dataset.state, +pet.dataset.row, +pet.dataset.frame, +pet.dataset.frameMs,
                                performance.now()]);
  const observer = new MutationObserver(note);
  observer.observe(pet, {attributes: true, attributeFilter: ['data-frame', 'data-row']});
  host.play(state);
  note();
  setTimeout(() => { observer.disconnect(); resolve(seen); }, 4000);
})"""


@pytest.mark.parametrize("row,state", list(enumerate(name for name, _ in STATES)))
def test_each_state_plays_its_row_with_its_frame_timing(page, host_pages, server, row, state):
    tenant = make_tenant(server)
    mascot_page(page, host_pages, server, tenant, f"state-{state}")
    at_rest(page)
    frames = dict(STATES)[state]
    seen = page.evaluate(RECORD, state)
    # distinct (row, frame) shown, in order, with the time each was shown
    shown = []
    for entry in seen:
        if not shown or shown[-1][1:3] != entry[1:3]:
            shown.append(entry)
    played = [s for s in shown if s[0] == state]
    assert [s[2] for s in played[:frames]] == list(range(frames))
    assert {s[1] for s in played} == {row}
    assert [s[3] for s in played[:frames]] == [FRAME_MS[state]] * (frames - 1) + [LAST_MS]
    for before, after in zip(played, played[1:frames]):
        assert after[4] - before[4] >= before[3] - 5  # a frame is never cut short (a lower bound only)
    if state in LOOPS:
        assert len(played) > frames and played[frames][2] == 0  # it loops
    else:
        assert shown[len(played)][0] == "idle" and shown[len(played)][1:3] == [0, 0]  # once, then idle


# the pet sits in the bottom left corner: the cursor stays inside the viewport, outside the 60 px dead zone
@pytest.mark.parametrize("dx,dy,index", [(0, -200, 0), (62, -62, 2), (200, 0, 4), (25, 60, 7), (0, 63, 8),
                                         (-63, 0, 12), (-50, -50, 14), (-25, -60, 15)])
def test_it_looks_toward_the_cursor(page, host_pages, server, dx, dy, index):
    tenant = make_tenant(server)
    mascot_page(page, host_pages, server, tenant, "look")
    at_rest(page)
    pet = page.locator(PET_SELECTOR)
    box = pet.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx + dx, cy + dy)
    eventually(lambda: pet.get_attribute("data-look") == str(index) and pet.get_attribute("data-row") == str(9 + index // 8))
    assert pet.get_attribute("data-frame") == str(index % 8)
    page.mouse.move(cx + 10, cy + 10)  # the dead zone: back to idle
    eventually(lambda: pet.get_attribute("data-row") == "0")


def test_reduced_motion_shows_idle_frame_zero_and_does_not_animate(browser, host_pages, server):
    tenant = make_tenant(server)
    context = browser.new_context(reduced_motion="reduce")
    try:
        page = context.new_page()
        mascot_page(page, host_pages, server, tenant, "reduced")
        pet = page.locator(PET_SELECTOR)
        page.mouse.move(10, 10)
        page.wait_for_timeout(800)
        assert (pet.get_attribute("data-state"), pet.get_attribute("data-row"), pet.get_attribute("data-frame")) \
            == ("idle", "0", "0")
        assert pet.get_attribute("data-look") is None
    finally:
        context.close()


@pytest.mark.parametrize("spritesheet,warning", [
    ("/nowhere/pet.png", "did not load"),
    ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
     "not 1536x2288")])
def test_a_pet_that_does_not_load_or_has_the_wrong_size_falls_back_to_the_default(page, host_pages, server, spritesheet,
                                                                                 warning):
    tenant = make_tenant(server)
    console = Console(page)
    if spritesheet.startswith("/"):
        spritesheet = server.base_url + spritesheet
    mascot_page(page, host_pages, server, tenant, "fallback", pet={"id": "x", "name": "Rex", "spritesheet": spritesheet})
    console.wait_for_warning(warning)
    eventually(lambda: page.locator(PET_SELECTOR).get_attribute("data-atlas") == server.base_url + "/pets/default/spritesheet.png")
    assert page.get_by_role("button", name="Chat with Rex").count() == 1


def test_both_surfaces_share_one_session_and_one_queue(page, host_pages, server, http):
    tenant = make_tenant(server)
    mascot_page(page, host_pages, server, tenant, "both", scripts=("widget.js", "mascot.js"),
                queued=[["sendMessage", "Asked once"], ["openChat"]])
    widget_log, mascot_log = "[data-parley=widget] .log .text", "[data-parley=mascot] .log .text"
    eventually(lambda: page.locator(widget_log).all_text_contents() == ["Asked once"])
    assert page.locator(mascot_log).all_text_contents() == ["Asked once"]
    assert page.locator("[data-parley=widget] .panel").is_visible()  # openChat is the widget's
    assert not page.locator("[data-parley=mascot] .bubble").is_visible()
    conversations = eventually(lambda: http.get("/api/conversations", headers=tenant.operator,
                                                params={"websiteId": str(tenant.website_id)}).json())
    assert len(conversations) == 1
    messages = http.get("/api/messages", headers=tenant.operator, params={"conversationId": conversations[0]["_id"]}).json()
    assert [m["content"] for m in messages] == ["Asked once"]  # applied once
    page.evaluate("window.$parley.push(['closeChat'])")
    page.locator(PET_SELECTOR).click()
    eventually(lambda: page.locator("[data-parley=mascot] .bubble").is_visible())
    http.post("/api/messages", headers=tenant.operator,
              json={"conversationId": conversations[0]["_id"], "content": "Answered for both", "from": "operator"})
    eventually(lambda: "Answered for both" in page.locator(mascot_log).all_text_contents())
    assert "Answered for both" in page.locator(widget_log).all_text_contents()


def test_the_mascot_alone_opens_its_bubble_from_the_queue(page, host_pages, server):
    tenant = make_tenant(server)
    mascot_page(page, host_pages, server, tenant, "alone", queued=[["sendMessage", "Hello, Pip"]])
    at_rest(page)
    page.evaluate("window.$parley.push(['openChat'])")
    bubble = page.get_by_role("dialog", name="Chat with us")  # the website's title, not the pet's name
    eventually(bubble.is_visible)
    eventually(lambda: page.locator("[data-parley=mascot] .log .text").all_text_contents() == ["Hello, Pip"])
    screenshot(page, "mascot-open")
    page.keyboard.press("Escape")
    eventually(lambda: not bubble.is_visible())
    assert page.locator(PET_SELECTOR).get_attribute("aria-expanded") == "false"


def validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parley.cli", "pets", "validate", str(path)], capture_output=True,
                          text=True)


def test_the_default_pet_is_valid_and_drawn_deterministically(tmp_path):
    done = validate(PET / "pet.json")
    assert done.returncode == 0, done.stdout
    assert validate(PET / "spritesheet.png").returncode == 0


def broken(tmp_path: Path, name: str, change) -> Path:
    manifest = json.loads((PET / "pet.json").read_text())
    atlas = Image.open(PET / "spritesheet.png").convert("RGBA")
    atlas, manifest, extension = change(atlas, manifest)
    folder = tmp_path / name
    folder.mkdir()
    manifest["spritesheetPath"] = f"sheet.{extension}"
    (folder / "pet.json").write_text(json.dumps(manifest))
    atlas.save(folder / f"sheet.{extension}", **({"lossless": False} if extension == "webp" else {}))
    return folder / "pet.json"


def paint_unused_cell(atlas, manifest):
    atlas.paste((255, 0, 0, 255), (7 * CELL_WIDTH + 10, 3 * CELL_HEIGHT + 10, 7 * CELL_WIDTH + 20, 3 * CELL_HEIGHT + 20))
    return atlas, manifest, "png"


def empty_frame(atlas, manifest):
    atlas.paste((0, 0, 0, 0), (0, 4 * CELL_HEIGHT, CELL_WIDTH, 5 * CELL_HEIGHT))
    return atlas, manifest, "png"


@pytest.mark.parametrize("name,change,expected", [
    ("size", lambda a, m: (a.resize((WIDTH // 2, HEIGHT // 2)), m, "png"), ["768x1144 pixels, not 1536x2288"]),
    ("opaque", lambda a, m: (a.convert("RGB"), m, "png"), ["no alpha channel"]),
    ("jpeg", lambda a, m: (a.convert("RGB"), m, "jpg"), ["neither PNG nor WebP", "no alpha channel"]),
    ("lossy", lambda a, m: (a, m, "webp"), ["lossy"]),
    ("unused", paint_unused_cell, ["row 3 (waving) column 7 is past its 4 frames"]),
    ("empty", empty_frame, ["row 4 (jumping) frame 0 is empty"]),
    ("version", lambda a, m: (a, {**m, "spriteVersionNumber": 1}, "png"), ["spriteVersionNumber is 1, not 2"]),
    ("fields", lambda a, m: (a, {k: v for k, v in m.items() if k not in ("id", "displayName")}, "png"),
     ["id is missing", "displayName is missing"]),
])
def test_the_validator_names_each_broken_rule(tmp_path, name, change, expected):
    done = validate(broken(tmp_path, name, change))
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    for fragment in expected:
        assert sum(fragment in line for line in lines) == 1, (fragment, lines)
    assert len(lines) == len(expected), lines
