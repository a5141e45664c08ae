"""The documentation keeps up with the code: every setting documented, every linked page present, and the
README's first commands work when pasted."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from parley.settings import ENVIRONMENT
from tests.conftest import make_server

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


README_URL = "URL=http://127.0.0.1:8000"


def test_the_readme_s_first_conversation_pastes_as_written(infra, tmp_path):
    """Its commands run in a shell as they are written (only the server's port differs), from a folder below
    the one `parley serve` keeps its `.parley` in, with `parley` not on the PATH."""
    section = (ROOT / "README.md").read_text().split("## A first conversation", 1)[1]
    commands = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    assert commands.startswith(README_URL + "\n")
    # as the README's reader runs it: no PARLEY_SECRETS_KEY, the data directory's key, which `parley admin` finds
    server = make_server(infra, tmp_path / ".parley", PARLEY_SECRETS_KEY="").start()
    try:
        below = tmp_path / "somewhere" / "below"
        below.mkdir(parents=True)
        # a new terminal's: not the test run's virtual environment (its python3 has no uv), no PARLEY_ setting
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("PARLEY_") and name != "VIRTUAL_ENV"}
        if os.environ.get("VIRTUAL_ENV"):
            venv_bin = str(Path(os.environ["VIRTUAL_ENV"]) / "bin")
            env["PATH"] = os.pathsep.join(part for part in env["PATH"].split(os.pathsep) if part != venv_bin)
        env["UV_PROJECT"] = str(ROOT)  # "from this folder": uv finds the project there
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c",
                               commands.replace(README_URL, f"URL={server.base_url}", 1)],
                              cwd=below, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        with server.client() as http:
            signed_in = http.post("/api/operators/sessions", json={"email": "me@acme.io", "password": "correct horse"})
            assert signed_in.status_code == 200, signed_in.text
            operator = {"Authorization": f"Token {signed_in.json()['token']}"}
            messages = http.get("/api/messages", headers=operator, params={"limit": 0}).json()
        assert [m["content"] for m in messages] == ["Hello!"]
        assert not (below / ".parley").exists() and not (tmp_path / "somewhere" / ".parley").exists()
    finally:
        server.stop()
