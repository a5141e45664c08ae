"""The layering of docs/architecture.md is a checked rule: import-linter's contracts (pyproject.toml) hold,
and no module takes part in an import cycle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("parley", "readapi", "mcp_server", "delivery", "projections", "commands", "events")


def test_the_import_contracts_hold():
    linter = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
                            cwd=ROOT, capture_output=True, text=True)
    assert linter.returncode == 0, linter.stdout + linter.stderr
    assert "BROKEN" not in linter.stdout and "KEPT" in linter.stdout


def test_no_module_imports_itself_back():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.append(" -> ".join((importer, *back)))
    assert cycles == []
