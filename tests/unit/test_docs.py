"""The documentation keeps up with the code: every setting documented, every linked page present."""

from __future__ import annotations

import re
from pathlib import Path

from parley.settings import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_in_docs_configuration():
    documented = set(re.findall(r"^\| `(PARLEY_[A-Z0-9_]+)` \|", (ROOT / "docs/configuration.md").read_text(), re.M))
    missing = sorted(set(ENVIRONMENT) - documented)
    assert not missing, f"add a row to docs/configuration.md for {missing}"


# The widget's and the mascot's page globals (docs/widget.md), not environment variables.
BROWSER_GLOBALS = {"PARLEY_WEBSITE_ID", "PARLEY_MASCOT"}


def test_every_variable_the_tests_examples_and_benchmarks_read_is_in_docs_configuration():
    documented = (ROOT / "docs/configuration.md").read_text()
    sources = [path for folder in ("tests", "examples", "bench") for path in (ROOT / folder).rglob("*.py")]
    named = {name for path in sources for name in re.findall(r"PARLEY_[A-Z0-9_]+", path.read_text())}
    assert sorted(name for name in named - BROWSER_GLOBALS if f"`{name}`" not in documented) == []


def test_the_readme_is_one_screen_and_its_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 45
    for target in re.findall(r"\]\((docs/[^)]+)\)", readme):
        assert (ROOT / target).is_file(), target
