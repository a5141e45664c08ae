"""axe-core, the accessibility engine, run inside the browser tests' pages.

The npm package is installed once into the test cache folder by tests/support/npm.py (`~/.cache/parley-test/npm`), with Debian's `nodejs` and `npm` installed first when they are missing and this process is root.
When it cannot be had, the test FAILS with the reason: a green run always means axe looked at every page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.npm import npm_modules

AXE_VERSION = "4.14"
SERIOUS = ("critical", "serious")
EVERY_IMPACT = ("critical", "serious", "moderate", "minor")


def ensure_axe() -> Path:
    """axe.min.js, installed by npm (tests/support/npm.py) when it is not in the cache yet."""
    return npm_modules(f"axe-core@{AXE_VERSION}") / "axe-core" / "axe.min.js"


@pytest.fixture(scope="session")
def axe_script() -> str:
    return ensure_axe().read_text()


def violations(page, axe_source: str) -> list[dict]:
    """axe's violations on the page as it is now (its open shadow roots included). The script is evaluated
    through the DevTools protocol, which a page's Content-Security-Policy does not restrict."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source)
    return page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ["violations"]});
        return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                                              targets: v.nodes.map((n) => n.target.join(" ")).slice(0, 5)}));
    }""")


def assert_accessible(page, axe_source: str, where: str, refused_impacts: tuple[str, ...] = SERIOUS) -> None:
    """No violation of the refused impacts on the page (by default no critical or serious one); the
    failure lists every violation found."""
    found = violations(page, axe_source)
    refused = [v for v in found if v["impact"] in refused_impacts]
    assert not refused, f"axe on {where}: " + "; ".join(
        f"{v['impact']} {v['id']} ({v['help']}) at {v['targets']}" for v in found)
