"""Node packages the tests run (never served to a browser): installed once per machine with `npm install
--prefix` under ~/.cache/parley-test/npm/<package@version>, from the npm registry, and reused after."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

CACHE = Path(os.environ.get("PARLEY_TEST_CACHE", Path.home() / ".cache" / "parley-test")) / "npm"


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("these tests run Node.js: install node and npm")
    return found


def npm_modules(spec: str) -> Path:
    """The node_modules folder holding `spec` ("oidc-provider@9.13.3") and its dependencies; the first
    call installs it (several test sessions at once wait for one another's install)."""
    prefix = CACHE / spec.replace("/", "+")
    prefix.mkdir(parents=True, exist_ok=True)
    done = prefix / ".installed"
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError("these tests install Node packages: install npm")
            subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
                            spec], check=True, capture_output=True, timeout=600)
            done.touch()
    return prefix / "node_modules"
