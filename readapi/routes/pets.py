"""The pet validator for operators: the dashboard sends an atlas it has not published yet and shows the
verdict, the same sentences `parley pets validate` prints (commands/pets.py). Nothing is stored."""

from __future__ import annotations

import asyncio

import msgspec
from litestar import Request, Response, post
from litestar.exceptions.http_exceptions import RequestEntityTooLarge

from commands.errors import Invalid
from commands import pets
from readapi.auth import OPERATOR
from readapi.openapi import RawBody, describe
from readapi.problems import problem
from readapi.services import json_response

ATLAS = RawBody(pets.MEDIA_TYPES, f"The atlas file itself (PNG or WebP), at most {pets.MAX_ATLAS_BYTES} bytes.")


class PetVerdict(msgspec.Struct):
    valid: bool
    failures: list[str]  # one sentence per broken rule; empty when valid


@describe("Check a pet atlas against every rule of the pet format", OPERATOR, body=ATLAS, answer=PetVerdict,
          errors=(413, 415), position=False, tag="pets",
          description="Answers `valid` and the rules the atlas breaks, one sentence each, as "
                      "`parley pets validate` prints them. A body that is not a PNG or WebP file at all is 400.",
          operation_id="validatePet")
@post("/api/pets/validate", status_code=200, request_max_body_size=pets.MAX_ATLAS_BYTES)
async def validate_pet(request: Request) -> Response:
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type not in pets.MEDIA_TYPES:
        return problem(415, f"send the atlas as {' or '.join(pets.MEDIA_TYPES)}", "Content-Type")
    try:
        data = await request.body()
    except RequestEntityTooLarge:
        return problem(413, f"the atlas is larger than {pets.MAX_ATLAS_BYTES} bytes", title="Content Too Large")
    if not pets.looks_like_atlas_file(data):
        raise Invalid("the body is not a PNG or WebP file")
    failures = await asyncio.to_thread(pets.validate_atlas, data)  # decoding takes a while: off the loop
    return json_response(PetVerdict(valid=not failures, failures=failures))


ROUTES = [validate_pet]
