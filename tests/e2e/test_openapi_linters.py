"""The OpenAPI document against two linters nobody here wrote, with their recommended rules: Redocly's and
Spectral's, configured at the repository's root (.redocly.yaml, .spectral.yaml: a rule turned off there
says why). No error and no warning is accepted. The document is the bare app's, as /schema/openapi.json
serves it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from readapi.openapi import build_document
from tests.support.apps import bare_app
from tests.support.linters import redocly, spectral  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def document_file(tmp_path_factory) -> Path:
    written = tmp_path_factory.mktemp("openapi") / "openapi.json"
    written.write_text(json.dumps(build_document(bare_app()), indent=1))
    return written


def test_redocly_recommended_finds_nothing(redocly, document_file):
    run = subprocess.run([str(redocly), "lint", "--config", str(ROOT / ".redocly.yaml"), "--format", "json",
                          str(document_file)], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert run.stdout.lstrip().startswith("{"), run.stdout + run.stderr
    report = json.loads(run.stdout)
    problems = [f"{item['ruleId']} at {[where['pointer'] for where in item['location']]}: {item['message']}"
                for item in report["problems"]]
    assert report["totals"]["errors"] == report["totals"]["warnings"] == 0 and run.returncode == 0, \
        "\n".join(problems) or run.stderr


def test_spectral_recommended_finds_nothing(spectral, document_file):
    run = subprocess.run([str(spectral), "lint", "--ruleset", str(ROOT / ".spectral.yaml"), "--format", "json",
                          "--fail-severity", "warn", str(document_file)],
                         capture_output=True, text=True, timeout=240, cwd=ROOT)
    output = run.stdout + run.stderr
    assert run.stdout.startswith("["), output
    found, _ = json.JSONDecoder().raw_decode(run.stdout)  # a sentence follows the JSON when it is empty
    problems = [f"{item['code']} at {'.'.join(map(str, item['path']))}: {item['message']}" for item in found
                if item["severity"] <= 1]  # 0 error, 1 warning
    assert not problems and run.returncode == 0, "\n".join(problems) or output
