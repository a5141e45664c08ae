"""The browser code's structure, read from the files alone (no browser, no server): no module cycle, one
element builder, one definition of the pet atlas format for Python and JavaScript, and every scope on the API
keys page."""

from __future__ import annotations

import json
import re
from pathlib import Path

from commands import pets
from commands.principal import ALL_SCOPES

WEB = Path(__file__).resolve().parents[2] / "web"
# A module names another by a quoted path ending in .js: a static import or export, or a path it imports
# dynamically (main.js's table of pages); "/x.js" is a path on the server, which serves web/ at its root.
MODULE_PATH = re.compile(r"""["'](\.{1,2}/[^"'\s]+\.js|/[^"'\s]+\.js)["']""")
H_DEFINITION = re.compile(r"\bfunction\s+h\s*\(|\b(?:const|let|var)\s+h\s*=\s*(?:\(|function\b)")


def scripts() -> list[Path]:
    return sorted(WEB.rglob("*.js"))


def imports(module: Path) -> set[Path]:
    found = set()
    for name in MODULE_PATH.findall(module.read_text()):
        target = (WEB / name.lstrip("/")) if name.startswith("/") else (module.parent / name)
        found.add(target.resolve())
    return found


def graph() -> dict[Path, set[Path]]:
    return {module.resolve(): imports(module) for module in scripts()}


def cycle_from(start: Path, edges: dict[Path, set[Path]]) -> list[Path] | None:
    """A path of imports from `start` back to itself, if there is one."""
    stack = [(start, [start])]
    seen = set()
    while stack:
        module, path = stack.pop()
        for target in edges.get(module, ()):
            if target == start:
                return path + [target]
            if target not in seen:
                seen.add(target)
                stack.append((target, path + [target]))
    return None


def test_every_imported_module_exists():
    missing = {(str(m.relative_to(WEB)), str(t)) for m, targets in graph().items() for t in targets if not t.is_file()}
    assert not missing


def test_no_module_cycle():
    edges = graph()
    # the reading sees the dashboard's pages, which main.js imports only dynamically
    assert (WEB / "app/pages/inbox.js").resolve() in edges[(WEB / "app/main.js").resolve()]
    cycles = [[str(p.relative_to(WEB)) for p in found] for module in edges if (found := cycle_from(module, edges))]
    assert not cycles


def test_nothing_imports_the_dashboards_entry():
    main = (WEB / "app/main.js").resolve()
    assert [str(m.relative_to(WEB)) for m, targets in graph().items() if main in targets] == []


def test_one_element_builder():
    definitions = [(str(path.relative_to(WEB)), match.group(0)) for path in scripts()
                   for match in H_DEFINITION.finditer(path.read_text())]
    assert [name for name, _ in definitions] == ["app/dom.js"], definitions


def test_the_pet_format_is_the_one_data_file():
    atlas = json.loads((WEB / "pets" / "atlas.json").read_text())
    assert pets.ATLAS_FORMAT_FILE.resolve() == (WEB / "pets" / "atlas.json").resolve()
    assert (pets.COLUMNS, pets.ROWS, pets.CELL_WIDTH, pets.CELL_HEIGHT) == (
        atlas["columns"], atlas["rows"], atlas["cellWidth"], atlas["cellHeight"])
    states = sorted(atlas["states"].items(), key=lambda item: item[1]["row"])
    assert [state["row"] for _, state in states] == list(range(len(states)))
    assert pets.STATES == tuple((name, state["frames"]) for name, state in states)
    assert pets.LOOK_ROWS == tuple(atlas["lookRows"]) == tuple(range(len(states), pets.ROWS))
    assert pets.MANIFEST_FIELDS == tuple(atlas["manifestFields"])
    assert pets.SPRITE_VERSION == atlas["spriteVersionNumber"]
    # the browser reads the file too, and keeps no copy of its numbers
    for script in ("mascot.js", "app/pages/websites.js"):
        assert "/pets/atlas.json" in (WEB / script).read_text(), script
    copies = [str(path.relative_to(WEB)) for path in scripts() if re.search(r"cellWidth\s*:", path.read_text())]
    assert copies == []


def test_the_api_keys_page_offers_every_scope():
    listed = re.search(r"const SCOPES = \[([^\]]*)\]", (WEB / "app" / "pages" / "keys.js").read_text()).group(1)
    assert set(re.findall(r'"([^"]+)"', listed)) == ALL_SCOPES


STATIC_IMPORT = re.compile(r"""^\s*(?:import|export)\s+(?:[^"';]*?\s+from\s+)?["']([^"']+\.js)["']""", re.MULTILINE)


def static_closure(*entries: str) -> set[str]:
    """The modules the entries import statically, and those they import, as paths on the server."""
    seen: set[Path] = set()
    stack = [(WEB / entry).resolve() for entry in entries]
    while stack:
        module = stack.pop()
        for name in STATIC_IMPORT.findall(module.read_text()):
            target = (WEB / name.lstrip("/")) if name.startswith("/") else (module.parent / name)
            if target.resolve() not in seen:
                seen.add(target.resolve())
                stack.append(target.resolve())
    return {"/" + str(path.relative_to(WEB)) for path in seen}


def test_the_dashboard_preloads_every_module_of_sign_in_and_the_inbox():
    """Every module of the shell (main.js), and of the inbox with its conversation, is a modulepreload of
    index.html: fetched with the page, rather than each once the module importing it has arrived; and
    nothing else is (a page visited later loads when visited)."""
    page = (WEB / "app" / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="([^"]+)">', page))
    assert preloaded == static_closure("app/main.js", "app/pages/inbox.js") | {"/app/pages/inbox.js"}
