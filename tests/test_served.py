"""Readers see a document's old version or its new one, never both: a search serves only the chunks of a
version a `documents` row points at, while a write has staged its new version and after its switch until
the old rows are deleted. Real LanceDB, the real model; the write paused by a wrapper of each."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest

from tests.conftest import make_settings
from thoth.embed import LOCAL_EMBED_BATCH, Embedder
from thoth.embedders import get_embedder
from thoth.records import Chunk, Hit
from thoth.retrieval.search import hybrid_search
from thoth.source_ref import content_hash
from thoth.store import Store, chunks
from thoth.store.chunks import FACTS_SECONDS
from thoth.store.schema import CHUNKS
from thoth.store.served import not_among
from thoth.writes.documents import ingest_text
from thoth.writes.writer import Writer

WAIT = 120  # seconds a paused write waits for the test (a loaded machine embeds slowly)


def ledger(revision: int, paragraphs: int, mentions: int) -> str:
    body = "\n\n".join(
        f"Paragraph {i} of revision {revision}: " + " ".join(["the zorbluxian ledger"] * mentions) + f" {i}."
        for i in range(paragraphs)
    )
    return f"# Ledger revision {revision}\n\n{body}\n"


class Pausing:
    """The real embedder; at its `at`-th call it says so (`reached`) and waits for `go`."""

    def __init__(self, inner: Embedder, at: int):
        self.inner, self.at, self.calls = inner, at, 0
        self.reached, self.go = threading.Event(), threading.Event()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.at:
            self.reached.set()
            self.go.wait(WAIT)
        return self.inner.embed_documents(texts)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


class SwitchPausing(Store):
    """The real store; once a write has switched its `documents` rows it says so and waits for `go`,
    before the writer deletes the old version's rows."""

    reached: threading.Event
    go: threading.Event

    def replace_documents(self, rows: list[dict]) -> None:
        super().replace_documents(rows)
        self.reached.set()
        self.go.wait(WAIT)


def searches(settings, embedder: Embedder) -> dict[str, Callable[[], list[Hit]]]:
    """Each search path over a reader's store of its own, as another server process has: in memory (a small
    table), and as a large table is read (row ids first, the kept hits whole), with and without its ranking
    columns held."""
    small, large = Store(settings), Store(settings)

    def late(search: Callable[[], list[Hit]], held: bool = True) -> Callable[[], list[Hit]]:
        def run() -> list[Hit]:
            with patch.object(chunks, "LATE_READ_ROWS", 1), patch.object(chunks, "RANKING_COPY_ROWS", 10**6 * held):
                return search()

        return run

    query = "zorbluxian ledger"
    return {
        "keyword": lambda: hybrid_search(small, None, "zorbluxian", 5, alpha=0.0).hits,
        "vector": lambda: hybrid_search(small, embedder, query, 5, alpha=1.0).hits,
        "hybrid": lambda: hybrid_search(small, embedder, query, 5).hits,
        "late keyword": late(lambda: hybrid_search(large, None, "zorbluxian", 5, alpha=0.0).hits),
        "late hybrid": late(lambda: hybrid_search(large, embedder, query, 5).hits),
        "late hybrid, no copy held": late(lambda: hybrid_search(large, embedder, query, 5).hits, held=False),
    }


def served(paths: dict[str, Callable[[], list[Hit]]]) -> dict[str, set[str]]:
    """The doc_ids each search path served, after checking it filled its 5 hits."""
    found = {name: search() for name, search in paths.items()}
    assert all(len(hits) == 5 for hits in found.values()), {n: len(h) for n, h in found.items()}
    return {name: {h.chunk.doc_id for h in hits} for name, hits in found.items()}


def test_searches_serve_the_old_version_while_the_new_one_is_staged_then_only_the_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 8)
    settings = make_settings(tmp_path / "db", chunk_tokens=48, tree_build=False)
    real = get_embedder(settings)
    # 32 of the new version's chunks (four write batches) staged first, whatever the embedding batch
    embedder = Pausing(real, at=32 // LOCAL_EMBED_BATCH + 1)
    store = SwitchPausing(settings)
    store.reached, store.go = threading.Event(), threading.Event()
    writer = Writer(settings, store=store, embedder=embedder)  # type: ignore[arg-type]
    old, new = ledger(1, 24, 1), ledger(2, 40, 6)  # the new version's chunks rank first, unfiltered
    store.go.set()
    ingest_text(writer, store, "notes", old, "ledger.md")
    old_id, new_id = content_hash(old.encode()), content_hash(new.encode())
    embedder.calls, store.reached, store.go = 0, threading.Event(), threading.Event()
    paths = searches(settings, real)
    assert set().union(*served(paths).values()) == {old_id}
    # a reader whose table handles look for new versions every 5 s (the server's default): it may find
    # either version at a pause, never both
    lagging = searches(replace(settings, read_consistency_seconds=5.0), real)
    assert all(len(doc_ids) == 1 for doc_ids in served(lagging).values())

    failed: list[BaseException] = []

    def overwrite() -> None:
        try:
            ingest_text(writer, store, "notes", new, "ledger.md")
        except BaseException as exc:  # the test's thread reports it
            failed.append(exc)

    thread = threading.Thread(target=overwrite)
    thread.start()
    try:
        assert embedder.reached.wait(WAIT)
        table = Store(settings).table(CHUNKS)
        unfiltered = table.search(real.embed_queries(["zorbluxian ledger"])[0]).metric("cosine").limit(5).to_list()
        assert {row["doc_id"] for row in unfiltered} == {new_id}  # staged rows rank first in the table
        assert all(doc_ids == {old_id} for doc_ids in served(paths).values())
        assert all(doc_ids == {old_id} for doc_ids in served(searches(settings, real)).values())
        assert all(len(doc_ids) == 1 for doc_ids in served(lagging).values())
        embedder.go.set()

        assert store.reached.wait(WAIT)  # switched: the old version's rows are still there
        # a search alone may take the live pairs it read before the switch for FACTS_SECONDS (served.py): past it
        time.sleep(FACTS_SECONDS)
        assert Store(settings).count_of(Chunk, {"doc_id": old_id}) > 0
        assert all(doc_ids == {new_id} for doc_ids in served(paths).values())
        assert all(doc_ids == {new_id} for doc_ids in served(searches(settings, real)).values())
        assert all(len(doc_ids) == 1 for doc_ids in served(lagging).values())
    finally:
        embedder.go.set()
        store.go.set()
        thread.join(WAIT)
    assert not failed and not thread.is_alive()
    assert Store(settings).count_of(Chunk, {"doc_id": old_id}) == 0
    assert all(doc_ids == {new_id} for doc_ids in served(paths).values())


def test_the_versions_left_out_are_named_as_written() -> None:
    clause = not_among({("notes", "b"), ("notes", "a"), ("it's", "c")})
    assert clause == "NOT ((source_id = 'it''s' AND doc_id IN ('c')) OR (source_id = 'notes' AND doc_id IN ('a', 'b')))"
