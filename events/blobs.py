"""Where attachments' bytes are kept: one small interface, two engines. The embedded default keeps each
file under the data directory by the SHA-256 of its bytes (content-addressed: the same bytes are stored
once); `PARLEY_STORAGE_URL` names an S3-compatible object store instead (through `obstore`), which several
API processes share. Keys are `sha256/<hex digest>` in both, so a deployment may copy its files across.

A file reaches a store from a staged file on local disk (the upload is streamed there, never held whole in
memory) and leaves it as a stream of chunks."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import AsyncIterator, Protocol
from urllib.parse import parse_qsl, urlsplit

CHUNK_BYTES = 256 * 1024


def key_of(digest: str) -> str:
    return f"sha256/{digest}"


class BlobStore(Protocol):
    async def put(self, staged: Path, digest: str) -> str:
        """Keeps the staged file (which it may move) under its digest; the key it is found by."""

    async def read(self, key: str) -> AsyncIterator[bytes] | None:
        """The file's bytes in chunks, or None when there is no such file."""

    async def delete(self, key: str) -> None:
        """Forgets the file (nothing happens when there is none)."""


class LocalBlobs:
    """Files under `root`, by digest: `root/sha256/ab/<digest>`."""

    def __init__(self, root: Path):
        self.root = root

    def path_of(self, key: str) -> Path:
        kind, _, digest = key.partition("/")
        if kind != "sha256" or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise ValueError(f"not a key of this store: {key!r}")
        return self.root / kind / digest[:2] / digest

    async def put(self, staged: Path, digest: str) -> str:
        key = key_of(digest)
        target = self.path_of(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, target)  # atomic: a reader sees the whole file or none (same bytes if it was there)
        return key

    async def read(self, key: str) -> AsyncIterator[bytes] | None:
        try:
            handle = open(self.path_of(key), "rb")
        except FileNotFoundError:
            return None

        async def chunks() -> AsyncIterator[bytes]:
            with handle:
                while chunk := await asyncio.to_thread(handle.read, CHUNK_BYTES):
                    yield chunk
        return chunks()

    async def delete(self, key: str) -> None:
        self.path_of(key).unlink(missing_ok=True)


class ObjectBlobs:
    """An S3-compatible object store (`s3://bucket/prefix?endpoint=...&region=...`; credentials from the
    URL's `access_key_id` and `secret_access_key` or the usual AWS_* variables)."""

    def __init__(self, url: str):
        from obstore.store import S3Store

        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query))
        endpoint = options.get("endpoint", "")
        self.store = S3Store.from_url(
            f"{parts.scheme}://{parts.netloc}{parts.path}", **options,
            client_options={"allow_http": endpoint.startswith("http://")})

    async def put(self, staged: Path, digest: str) -> str:
        import obstore

        key = key_of(digest)
        # a multipart upload from the file, two parts (of S3's least size) at a time: never the whole file in memory
        await obstore.put_async(self.store, key, staged, chunk_size=5 * 1024 * 1024, max_concurrency=2)
        staged.unlink(missing_ok=True)
        return key

    async def read(self, key: str) -> AsyncIterator[bytes] | None:
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            result = await obstore.get_async(self.store, key)
        except (NotFoundError, FileNotFoundError):
            return None

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in result.stream(min_chunk_size=CHUNK_BYTES):
                yield bytes(chunk)
        return chunks()

    async def delete(self, key: str) -> None:
        import obstore

        await obstore.delete_async(self.store, key)


def blob_store(storage_url: str, data_dir: Path) -> BlobStore:
    """The store `PARLEY_STORAGE_URL` names, or the embedded one under the data directory."""
    if storage_url:
        return ObjectBlobs(storage_url)
    return LocalBlobs(data_dir / "attachments")
