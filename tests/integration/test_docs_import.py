"""`parley docs import`: a folder of Markdown files becomes documents, idempotently."""

from __future__ import annotations

import json
import subprocess
import sys


def run_import(server, folder, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "parley.cli", "docs", "import", str(folder), *args],
                          env=server.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def head(server) -> int:
    store = server.store()
    try:
        return store.head()
    finally:
        store.close()


def listed(server, http, tenant) -> dict[str, dict]:
    server.wait_projected(head(server), "documents")
    return {d["title"]: d for d in http.get("/api/documents", params={"websiteId": str(tenant.website_id)},
                                            headers=tenant.operator).json()}


def test_import_creates_then_changes_nothing_then_updates(server, http, tenant, tmp_path):
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "invoices.md").write_text("# Downloading invoices\n\nOpen **Billing** > Invoices.\n")
    (tmp_path / "billing" / "refunds.md").write_text("Intro line.\n\n# Refund policy\n\nWithin 30 days.\n")
    (tmp_path / "welcome.md").write_text("No heading here, just text.\n")
    (tmp_path / "notes.txt").write_text("# Not Markdown\n")
    website = ["--website", str(tenant.website_id)]

    assert run_import(server, tmp_path, *website, "--publish") == {
        "files": 3, "created": 3, "updated": 0, "unchanged": 0}
    docs = listed(server, http, tenant)
    assert set(docs) == {"Downloading invoices", "Refund policy", "welcome"}
    invoices = docs["Downloading invoices"]
    assert invoices["category"] == "billing" and invoices["published"] is True and invoices["locale"] == "en"
    assert invoices["content"] == "Open **Billing** > Invoices."
    assert docs["Refund policy"]["content"] == "Intro line.\n\nWithin 30 days."
    assert docs["welcome"]["category"] is None

    position = head(server)
    assert run_import(server, tmp_path, *website, "--publish") == {
        "files": 3, "created": 0, "updated": 0, "unchanged": 3}
    assert head(server) == position  # nothing was written

    (tmp_path / "billing" / "invoices.md").write_text("# Downloading invoices\n\nOpen Billing, then Invoices.\n")
    assert run_import(server, tmp_path, *website, "--publish") == {
        "files": 3, "created": 0, "updated": 1, "unchanged": 2}
    docs = listed(server, http, tenant)
    assert docs["Downloading invoices"]["_id"] == invoices["_id"]
    assert docs["Downloading invoices"]["content"] == "Open Billing, then Invoices."

    http.delete(f"/api/documents/{invoices['_id']}", headers=tenant.operator)
    assert run_import(server, tmp_path, *website, "--publish", "--locale", "fr") == {
        "files": 3, "created": 1, "updated": 2, "unchanged": 0}
    docs = listed(server, http, tenant)
    assert {d["locale"] for d in docs.values()} == {"fr"} and len(docs) == 3


def test_import_refuses_an_unknown_website_a_bad_locale_or_an_overlong_title(server, tenant, tmp_path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "a.md").write_text("# A\n")
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "a.md").write_text("# " + "x" * 301 + "\n")
    before = head(server)
    for folder, args in (("good", ["--website", "7c9e6679-7425-40de-944b-e07fc1f90ae7"]),
                         ("good", ["--website", str(tenant.website_id), "--locale", "no good"]),
                         ("long", ["--website", str(tenant.website_id)])):
        done = subprocess.run([sys.executable, "-m", "parley.cli", "docs", "import", str(tmp_path / folder), *args],
                              env=server.env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert "error" in json.loads(done.stderr.strip().splitlines()[-1])
    assert head(server) == before
