"""Reading a `multipart/form-data` upload as it arrives: the `file` part's bytes are handed on chunk by chunk
(to be staged on disk), never gathered in memory; other parts are skipped. A body whose Content-Length is
over the limit is refused before a byte of it is read; one that passes the limit while streaming (a
chunked body, a lying length) is refused at that moment."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import AsyncIterator

from commands.errors import Invalid

MAX_HEADER_BYTES = 16 * 1024
# a part's headers and the boundaries around the file: what a body may hold beyond the file's own bytes
MULTIPART_OVERHEAD = 64 * 1024


@dataclass
class FilePart:
    filename: str | None
    chunks: AsyncIterator[bytes]


def boundary_of(content_type: str | None) -> bytes:
    media, _, params = (content_type or "").partition(";")
    found = re.search(r'boundary="?([^";]+)"?', params)
    if media.strip().lower() != "multipart/form-data" or not found:
        raise Invalid("the body must be multipart/form-data with a `file` part", "file")
    return found.group(1).encode()


def header_params(raw: bytes) -> tuple[str | None, str | None]:
    """(name, filename) of a part, from its Content-Disposition."""
    text = raw.decode("utf-8", "replace")
    disposition = next((line.partition(":")[2] for line in text.split("\r\n")
                        if line.lower().startswith("content-disposition:")), "")
    name = re.search(r';\s*name="([^"]*)"', disposition)
    filename = re.search(r';\s*filename="([^"]*)"', disposition)
    return (name.group(1) if name else None), (filename.group(1) if filename else None)


class MultipartReader:
    def __init__(self, stream: AsyncIterator[bytes], boundary: bytes):
        self.stream = stream
        self.delimiter = b"\r\n--" + boundary
        self.buffer = b"\r\n"  # so that the first boundary reads like every other one

    async def _more(self) -> None:
        chunk = await anext(self.stream, None)
        if chunk is None:
            raise Invalid("the multipart body ends before its closing boundary", "file")
        self.buffer += chunk

    async def _to_first_part(self) -> None:
        while (at := self.buffer.find(self.delimiter)) < 0:
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise Invalid("no multipart boundary where the body starts", "file")
            await self._more()
        self.buffer = self.buffer[at + len(self.delimiter):]

    async def _after_boundary(self) -> bool:
        """After a boundary: True when a part follows, False at the closing one."""
        while len(self.buffer) < 2:
            await self._more()
        return not self.buffer.startswith(b"--")

    async def _headers(self) -> bytes:
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise Invalid("a multipart part's headers are too long", "file")
            await self._more()
        headers, self.buffer = self.buffer[:end], self.buffer[end + 4:]
        return headers

    async def _body(self) -> AsyncIterator[bytes]:
        """The current part's bytes, up to the next boundary (which is consumed)."""
        keep = len(self.delimiter) - 1
        while True:
            at = self.buffer.find(self.delimiter)
            if at >= 0:
                if at:
                    yield self.buffer[:at]
                self.buffer = self.buffer[at + len(self.delimiter):]
                return
            if len(self.buffer) > keep:
                ready, self.buffer = self.buffer[:-keep], self.buffer[-keep:]
                yield ready
            await self._more()

    async def file(self) -> FilePart:
        """The `file` part (the parts before it skipped), its bytes still to be read."""
        await self._to_first_part()
        while await self._after_boundary():
            name, filename = header_params(await self._headers())
            if name == "file":
                return FilePart(filename, self._body())
            async for _ in self._body():
                pass
        raise Invalid("the multipart body has no `file` part", "file")
