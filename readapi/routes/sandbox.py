"""The keyless sandbox: fixed demonstration documents and a summary job that finishes by itself.

No credential is needed and one sent anyway is ignored (the rate limiter counts every sandbox request
against the anonymous per-address limit instead)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Literal

import msgspec
from litestar import Request, Response, get, post
from litestar.params import FromPath

from commands import sandbox
from commands.errors import NotFound
from events.ids import parse_id
from projections.views.sandbox import job_created_at
from readapi.auth import PUBLIC
from readapi.openapi import ID, describe
from readapi.services import json_response, run_command, services, written

JOBS_PATH = "/api/sandbox/documentsummaryjobs"


class SandboxDocument(msgspec.Struct):
    title: str
    locale: str


SANDBOX_DOCUMENTS = (
    SandboxDocument("Getting started with the chat widget", "en"),
    SandboxDocument("Identifying signed-in visitors", "en"),
    SandboxDocument("Verifying webhook signatures", "en"),
    SandboxDocument("Premiers pas avec le widget de chat", "fr"),
    SandboxDocument("Erste Schritte mit dem Chat-Widget", "de"),
    SandboxDocument("Primeros pasos con el widget de chat", "es"),
)


def _summarize(documents: tuple[SandboxDocument, ...]) -> str:
    locales = sorted({d.locale for d in documents})
    return (f"{len(documents)} help documents in {len(locales)} locales ({', '.join(locales)}): "
            + "; ".join(d.title for d in documents) + ".")


SUMMARY = _summarize(SANDBOX_DOCUMENTS)  # the fixture work: the same text for every job


class SummaryJob(msgspec.Struct, omit_defaults=True, rename={"id": "_id"}):
    id: uuid.UUID
    status: Literal["running", "succeeded"]
    summary: str | None = None


def job_state(job_id: uuid.UUID, created_at: datetime, at: datetime, duration_seconds: float) -> SummaryJob:
    if at >= created_at + timedelta(seconds=duration_seconds):
        return SummaryJob(job_id, "succeeded", SUMMARY)
    return SummaryJob(job_id, "running")


@describe("The sandbox's fixed demonstration documents (no credential)", PUBLIC, answer=list[SandboxDocument],
          tag="sandbox", operation_id="listSandboxDocuments")
@get("/api/sandbox/documents")
async def list_documents() -> Response:
    return json_response(SANDBOX_DOCUMENTS)


@describe("Start a sandbox summary job (no credential); it finishes by itself", PUBLIC, answer=SummaryJob,
          links={"getSummaryJob": {"jobId": ID}},
          headers=("Location",), tag="sandbox", operation_id="createSummaryJob")
@post(JOBS_PATH, status_code=202)
async def create_summary_job(request: Request) -> Response:
    created = await run_command(request, sandbox.create_summary_job)
    await written(request, created, ("sandbox",))
    response = json_response(SummaryJob(created.id, "running"), created, status=202)
    response.set_header("Location", f"{JOBS_PATH}/{created.id}")
    return response


@describe("Read a sandbox summary job", PUBLIC, answer=SummaryJob, tag="sandbox", operation_id="getSummaryJob")
@get(JOBS_PATH + "/{job_id:str}")
async def get_summary_job(request: Request, job_id: FromPath[str]) -> Response:
    svc = services(request)
    parsed = parse_id(job_id)
    created_at = None
    if parsed is not None:
        async with svc.pool.connection() as conn:
            created_at = await job_created_at(conn, parsed)
    if created_at is None:
        raise NotFound("no sandbox job has this id", "jobId")
    return json_response(job_state(parsed, created_at, svc.clock(), svc.settings.sandbox_job_seconds))


ROUTES = [list_documents, create_summary_job, get_summary_job]
