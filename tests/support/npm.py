"""Node packages the tests run (never served to a browser): installed once per machine with `npm install
--prefix` under ~/.cache/parley-test/npm/<package@version>, from the npm registry, and reused after."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.browser import ensure_debian_package

CACHE = Path(os.environ.get("PARLEY_TEST_CACHE", Path.home() / ".cache" / "parley-test")) / "npm"


def node() -> str:
    return shutil.which("node") or str(ensure_debian_package(Path("/usr/bin/node"), "nodejs"))


def npm_modules(spec: str) -> Path:
    """The node_modules folder holding `spec` ("oidc-provider@9.13.3") and its dependencies; the first
    call installs it (several test sessions at once wait for one another's install)."""
    prefix = CACHE / spec.replace("/", "+")
    prefix.mkdir(parents=True, exist_ok=True)
    done = prefix / ".installed"
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            npm = shutil.which("npm") or str(ensure_debian_package(Path("/usr/bin/npm"), "npm"))
            installed = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                                        "--no-save", spec], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                       timeout=600)
            if installed.returncode != 0:
                pytest.fail(f"npm could not install {spec} into {prefix}:\n{installed.stderr[-2000:]}", pytrace=False)
            done.touch()
    return prefix / "node_modules"
