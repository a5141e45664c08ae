"""OpenAPI linters the tests run (Node programs, installed by tests/support/npm.py): Redocly's CLI and
Spectral's. Fixtures (import them with `from tests.support.linters import redocly, spectral  # noqa: F401`):
each is the path of the program, installed once per machine; an install that fails fails the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.npm import npm_modules

REDOCLY = "@redocly/cli@2.77.0"
SPECTRAL = "@stoplight/spectral-cli@6.16.3"


def program(spec: str, name: str) -> Path:
    found = npm_modules(spec) / ".bin" / name
    assert found.exists(), f"{spec} installed no {name} program"
    return found


@pytest.fixture(scope="session")
def redocly() -> Path:
    return program(REDOCLY, "redocly")


@pytest.fixture(scope="session")
def spectral() -> Path:
    return program(SPECTRAL, "spectral")
