"""What the search benchmarks share: a private PostgreSQL, an organization with one website, documents
imported through the same command `parley docs import` uses, and the projections caught up in-process.

The benchmarks call the read functions the routes call (`search_documents`, `list_documents`), so the
figures are the service's own work without HTTP in front.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from commands import admin  # noqa: E402
from events.sealing import Sealer  # noqa: E402
from commands.documents import Fields, import_document, parse_markdown  # noqa: E402
from commands.principal import Principal  # noqa: E402
from events.store import EventStore  # noqa: E402
from parley.embedded import EmbeddedPostgres  # noqa: E402
from events.ids import new_id  # noqa: E402
from parley.settings import Settings  # noqa: E402
from parley.runtime import PROJECTIONS  # noqa: E402
from projections.runner import catch_up_if_idle  # noqa: E402
from projections.search import close_indexes  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"


@dataclass
class Bench:
    database_url: str
    settings: Settings
    store: EventStore
    website_id: object
    principal: Principal

    def import_markdown(self, source: str, text: str, category: str | None) -> None:
        title, content = parse_markdown(text, Path(source).stem)
        import_document(self.store, self.website_id, source, Fields(title, "en", category, True, content))

    def project(self, name: str) -> float:
        """Catches the named projection up with the store; returns the seconds it took."""
        projection = PROJECTIONS[name](self.settings)
        started = time.perf_counter()
        asyncio.run(catch_up_if_idle(self.database_url, projection, self.store))
        return time.perf_counter() - started


@contextlib.contextmanager
def bench_environment() -> Iterator[Bench]:
    with tempfile.TemporaryDirectory(prefix="parley-bench-") as tmp:
        postgres = EmbeddedPostgres(Path(tmp) / "postgres", durable=False)
        postgres.start()
        store = EventStore(postgres.url, pool_size=2)
        try:
            org = admin.create_org(store, "Bench")
            website, _ = admin.create_website(store, Sealer.generate(), org.id, "bench-help", None)
            settings = Settings(data_dir=Path(tmp) / "data")
            yield Bench(postgres.url, settings, store, website.id, Principal("operator", org.id, new_id()))
        finally:
            close_indexes()
            store.close()
            postgres.stop()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def median(samples: list[float]) -> float:
    return statistics.median(samples)
