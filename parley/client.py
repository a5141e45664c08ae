"""The command-line client's plumbing: profiles (a server's URL and an operator token, one file each
under the user's configuration directory, mode 0600) and HTTP calls that turn a server's refusal into
its problem `detail` on stderr and exit code 1 (docs/cli.md)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import platformdirs

DEFAULT_PROFILE = "default"
TIMEOUT = httpx.Timeout(30.0, read=60.0)


class Refused(Exception):
    """The command cannot go on: the message goes to stderr, the exit code is 1. `status` is the
    server's HTTP status when it is the server that refused."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir("parley"))


def profile_path(name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise Refused(f"invalid profile name {name!r}")
    return config_dir() / "profiles" / f"{name}.json"


@dataclass
class Profile:
    name: str
    url: str
    token: str

    @classmethod
    def load(cls, name: str) -> "Profile":
        path = profile_path(name)
        try:
            stored = json.loads(path.read_text())
        except FileNotFoundError:
            raise Refused(f"not logged in (profile {name}): run `parley login`") from None
        return cls(name, stored["url"], stored["token"])

    def save(self) -> Path:
        """Written 0600 from its creation (never readable by others, even for a moment)."""
        path = profile_path(self.name)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(".tmp")
        temporary.unlink(missing_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({"url": self.url, "token": self.token}, out)
        os.replace(temporary, path)
        return path

    def forget(self) -> None:
        profile_path(self.name).unlink(missing_ok=True)


def _refusal(response: httpx.Response) -> Refused:
    """The server's refusal; a stored token it no longer takes (a login ends after 30 days, or was
    revoked) says what to do about it."""
    detail = problem_detail(response)
    if response.status_code == 401:
        detail += "; run `parley login` again"
    return Refused(detail, response.status_code)


def problem_detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code} {response.reason_phrase}"
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("error_description") or body.get("title") or body.get("error")
        if detail:
            return f"{response.status_code}: {detail}"
    return f"{response.status_code} {response.reason_phrase}"


class Api:
    """An operator's HTTP calls to one server."""

    def __init__(self, profile: Profile):
        self.profile = profile
        self.http = httpx.Client(base_url=profile.url, timeout=TIMEOUT,
                                 headers={"Authorization": f"Token {profile.token}"})

    def call(self, method: str, path: str, **options: Any) -> Any:
        try:
            response = self.http.request(method, path, **options)
        except httpx.HTTPError as exc:
            raise Refused(f"cannot reach {self.profile.url}: {exc}") from None
        if response.status_code >= 400:
            raise _refusal(response)
        return response.json() if response.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def lines(self, path: str, opened: Callable[[], None], **params: Any) -> Iterator[str]:
        """A streaming answer, line by line (Server-Sent Events, NDJSON); `opened` runs once the server
        has accepted it, so that nothing written after that is missed."""
        try:
            with self.http.stream("GET", path, params={k: v for k, v in params.items() if v is not None},
                                  timeout=httpx.Timeout(30.0, read=None)) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _refusal(response)
                opened()
                yield from response.iter_lines()
        except httpx.HTTPError as exc:
            raise Refused(f"cannot reach {self.profile.url}: {exc}") from None


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def print_table(rows: list[dict], columns: list[str]) -> None:
    """Columns as wide as their widest cell; a cell's newlines shown as spaces."""
    cells = [[" ".join(str("" if row.get(c) is None else row.get(c)).split()) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]
    for line in [columns] + cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def progress(done: int, total: int, label: str) -> None:
    """A progress bar on stderr, rewritten in place."""
    filled = 30 * done // max(total, 1)
    print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {label[:60]:<60}", end="", file=sys.stderr,
          flush=True)


def read_text(value: str) -> str:
    """The text argument, or stdin for `-`."""
    text = sys.stdin.read() if value == "-" else value
    if not text.strip():
        raise Refused("the text is empty")
    return text
