"""Notification e-mail benchmark: 10,000 due digests sent by the mail worker to a local SMTP server.

The worker (delivery/mail.py, as a child process) claims rows of the outbox, renders each digest (its
operator, its items, the website: three queries), marks it `sending`, sends the final "." and marks it sent.
The floor, measured in the same run against the same aiosmtpd server, is a bare smtplib loop sending
messages of the same size over one kept connection: the ratio says what the outbox, the rendering and the
exactly-once marks cost on top of SMTP itself. Floor and worker are interleaved (floor, worker, floor) after
a warm-up of both. Then a second round is killed (SIGKILL) mid-batch and started again: none of either
round may arrive twice (Message-IDs counted at the server).

    python bench/notifications.py [--count 10000] [--goal 0.15]
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import smtplib
import sys
import tempfile
import time
from collections import Counter
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Goal, finish  # noqa: E402
from parley.embedded import EmbeddedPostgres  # noqa: E402
from tests.support.mail_worker import create_tables, seed, start_worker, statuses  # noqa: E402
from tests.support.smtp import SmtpInbox  # noqa: E402


def bare_loop(inbox: SmtpInbox, count: int, size: int) -> float:
    """Messages per second of a plain smtplib loop on one connection."""
    message = EmailMessage()
    message["From"], message["Subject"] = "floor@bench.test", "floor"
    message.set_content("\n".join("x" * 70 for _ in range(max(1, size // 71))))
    data = message.as_bytes(policy=SMTP)
    started = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", inbox.port) as smtp:
        for n in range(count):
            smtp.sendmail("floor@bench.test", [f"floor-{n}@bench.test"], data)
    return count / (time.perf_counter() - started)


def worker_round(database_url: str, inbox: SmtpInbox, key: str, batch: str, count: int,
                 kill_after: int | None = None) -> float:
    """Seeds `count` due digests and lets a worker send them all; messages per second from its first
    message to its last (with `kill_after`, the worker is killed after that many and started again)."""
    seed(database_url, batch, count)
    before = len(inbox.messages)
    mine = f"-{batch}-"
    worker = start_worker(database_url, inbox.url, key)
    try:
        inbox.wait_for(lambda received: len(received) > before, timeout=60)
        started = time.perf_counter()
        if kill_after is not None:
            inbox.wait_for(lambda received: len(received) >= before + kill_after, timeout=120)
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            worker = start_worker(database_url, inbox.url, key)
        while (left := statuses(database_url)).get("pending") or left.get("sending"):
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
    finally:
        worker.kill()
        worker.wait()
    sent = sum(1 for m in inbox.messages[before:] if any(mine in r for r in m.recipients))
    return sent / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--goal", type=float, default=0.15, help="least worker/floor ratio")
    args = parser.parse_args()
    key = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as folder, SmtpInbox() as inbox:
        postgres = EmbeddedPostgres(Path(folder) / "postgres", durable=False)
        postgres.start()
        try:
            database_url = postgres.url
            create_tables(database_url)
            worker_round(database_url, inbox, key, "warm", 300)
            size = len(inbox.messages[-1].raw)
            bare_loop(inbox, 300, size)
            floor_before = bare_loop(inbox, args.count // 2, size)
            figure = worker_round(database_url, inbox, key, "main", args.count)
            floor_after = bare_loop(inbox, args.count // 2, size)
            worker_round(database_url, inbox, key, "killed", 2_000, kill_after=500)
            done = statuses(database_url)
            worker_messages = [m for m in inbox.messages if not m.recipients[0].startswith("floor-")]
        finally:
            postgres.stop()
    floor = (floor_before + floor_after) / 2
    twice = [mid for mid, n in Counter(m.message["Message-ID"] for m in worker_messages).items() if n > 1]
    ratio = figure / floor
    print(f"messages of {size} bytes; worker: {figure:.0f} messages/s; bare smtplib loop: {floor:.0f} messages/s "
          f"({floor_before:.0f} before, {floor_after:.0f} after); ratio {ratio:.2f} (goal >= {args.goal})")
    print(f"outbox: {done}; received by the server: {len(worker_messages)}; sent twice: {len(twice)}")
    settled = done.get("sent", 0) + done.get("uncertain", 0)
    finish([Goal.at_least("worker x the bare loop", ratio, args.goal, "x"),
            Goal("no message sent twice", not twice, f"{len(twice)} twice"),
            Goal(f"every row sent or uncertain ({args.count + 2_300:,})", settled == args.count + 2_300, f"{settled:,}")])


if __name__ == "__main__":
    main()
