"""`parley serve` as the HTTP benchmarks start it: on a free port, from this checkout."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start_serve(data_dir: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Starts `parley serve` and returns it with its base URL once it listens. Its output is read on in
    the background: a full pipe would block the server."""
    proc = subprocess.Popen([sys.executable, "-m", "parley.cli", "serve", "--port", "0", "--data-dir", str(data_dir)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:
        if " listening on " in line:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, line.rsplit(" ", 1)[1].strip()
    raise RuntimeError(f"parley serve exited with {proc.wait()} before it listened")
