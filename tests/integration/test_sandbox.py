"""The keyless sandbox: fixed documents, the summary job's timeline, jobs surviving a restart."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from tests.support.servers import make_server
from tests.support.inprocess import InProcessApi
from commands.streams import now
from readapi.routes.sandbox import SANDBOX_DOCUMENTS, SUMMARY

JOBS = "/api/sandbox/documentsummaryjobs"


def assert_limit_headers(response, policy: str = "anonymous") -> None:
    assert response.headers["API-Version"] == "1"
    assert response.headers["RateLimit-Policy"].startswith(f'"{policy}";q=')
    assert response.headers["RateLimit"].startswith(f'"{policy}";r=')


def test_documents_are_the_fixture_in_several_locales(http):
    response = http.get("/api/sandbox/documents")
    assert response.status_code == 200
    documents = response.json()
    assert documents == [{"title": d.title, "locale": d.locale} for d in SANDBOX_DOCUMENTS]
    assert len({d["locale"] for d in documents}) >= 3
    assert all(set(d) == {"title", "locale"} for d in documents)
    assert_limit_headers(response)


@pytest.mark.parametrize("authorization", ["Basic bm9wZQ==", "Token not-a-token", "Bearer x", "Basic !!!"])
def test_a_credential_sent_anyway_is_ignored(http, authorization):
    response = http.get("/api/sandbox/documents", headers={"Authorization": authorization})
    assert response.status_code == 200
    assert_limit_headers(response)
    created = http.post(JOBS, headers={"Authorization": authorization})
    assert created.status_code == 202


def test_a_valid_credential_is_ignored_too_and_counts_as_anonymous(http, tenant):
    response = http.get("/api/sandbox/documents", headers=tenant.key())
    assert response.status_code == 200
    assert_limit_headers(response, "anonymous")


def test_creating_a_job_answers_202_with_its_location(http):
    response = http.post(JOBS)
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "running" and set(body) == {"_id", "status"}
    assert response.headers["Location"] == f"{JOBS}/{body['_id']}"
    assert_limit_headers(response)
    job = http.get(response.headers["Location"])
    assert job.status_code == 200
    assert job.json()["_id"] == body["_id"]
    assert_limit_headers(job)


@pytest.mark.parametrize("job_id", [str(uuid.uuid4()), "not-an-id", "01a20121-08b3-7000-890c-478ed0fbe790"])
def test_an_unknown_job_is_404_problem(http, job_id):
    response = http.get(f"{JOBS}/{job_id}")
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["status"] == 404
    assert_limit_headers(response)


@pytest.fixture(scope="module")
def api(infra):
    running = InProcessApi(infra.new_database(), infra.nats_url)
    yield running
    running.close()


def test_the_job_runs_then_succeeds_two_seconds_after_creation(api):
    created = api.request("POST", JOBS)
    assert created.status_code == 202
    job_url = created.headers["Location"]
    with psycopg.connect(api.runtime.database_url) as conn:
        created_at = conn.execute("SELECT created_at FROM rm_sandbox_jobs WHERE id = %s",
                                  (uuid.UUID(created.json()["_id"]),)).fetchone()[0]

    def state_at(seconds_after_creation: float) -> dict:
        api.services.clock = lambda: created_at + timedelta(seconds=seconds_after_creation)
        response = api.request("GET", job_url)
        assert response.status_code == 200
        return response.json()

    try:
        assert state_at(0) == {"_id": created.json()["_id"], "status": "running"}
        assert state_at(1.99)["status"] == "running"
        assert state_at(2) == {"_id": created.json()["_id"], "status": "succeeded", "summary": SUMMARY}
        assert state_at(3600) == state_at(2)
    finally:
        api.services.clock = now


def test_the_summary_is_the_same_for_every_job(api):
    later = datetime.now(timezone.utc) + timedelta(seconds=10)
    api.services.clock = lambda: later
    try:
        summaries = {api.request("GET", api.request("POST", JOBS).headers["Location"]).json()["summary"]
                     for _ in range(3)}
    finally:
        api.services.clock = now
    assert summaries == {SUMMARY}
    assert SUMMARY.startswith(f"{len(SANDBOX_DOCUMENTS)} help documents in 4 locales (de, en, es, fr)")


def test_jobs_survive_a_restart(infra, tmp_path):
    server = make_server(infra, tmp_path).start()
    try:
        with server.client() as client:
            job_url = client.post(JOBS).headers["Location"]
        server.stop()
        server.start()
        with server.client() as client:
            response = client.get(job_url)
        assert response.status_code == 200
        assert response.json()["status"] in ("running", "succeeded")
    finally:
        server.stop()
