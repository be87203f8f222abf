"""A write streams: chunks are embedded one embedding batch at a time and staged a bounded number of rows
at a time, with the rows and vectors a write of the whole document at once makes."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import make_settings
from thoth.embed import Embedder, embed_batch, texts_per_call
from thoth.embedders import get_embedder
from thoth.records import Chunk, Document
from thoth.source_ref import content_hash
from thoth.store import Store
from thoth.store.schema import CHUNKS
from thoth.writes.documents import ingest_text
from thoth.writes.gate import ShuttingDown
from thoth.writes.writer import Writer


def note(version: int, sentences: int) -> str:
    lines = (f"Version {version}, rule {i}: the vault door is checked by shift {i % 9}.\n" for i in range(sentences))
    return "".join(lines)


class Recording:
    """The real embedder, counting the texts of each call (what the writer hands it at once); after
    `stop_after` calls it sets `stop`, as the write gate does at SIGTERM."""

    def __init__(self, inner: Embedder, stop: threading.Event | None = None, stop_after: int = 0):
        self.inner, self.stop, self.stop_after = inner, stop, stop_after
        self.calls: list[int] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        if self.stop is not None and len(self.calls) >= self.stop_after:
            self.stop.set()
        return self.inner.embed_documents(texts)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def vectors(store: Store) -> dict[str, np.ndarray]:
    rows = [r for b in store.scan_of(Chunk, ["chunk_id", "vector"]) for r in b.to_pylist()]
    return {r["chunk_id"]: np.asarray(r["vector"]) for r in rows}


def test_a_long_document_is_staged_in_batches_with_the_rows_of_one_whole_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 10)
    streamed = make_settings(tmp_path / "streamed", tree_build=False)
    embedder = Recording(get_embedder(streamed))
    writer = Writer(streamed, embedder=embedder)  # type: ignore[arg-type]
    ingest_text(writer, writer.store, "notes", note(1, 3), "vault.md")
    before = writer.store.versions([CHUNKS])[CHUNKS]
    embedder.calls.clear()
    ingest_text(writer, writer.store, "notes", note(2, 300), "vault.md")
    chunks = sum(embedder.calls)
    step = embed_batch(streamed)
    assert chunks > 3 * step and max(embedder.calls) == step  # the embedder's own batch, never the document
    # one commit per staged slice of >= 10 rows, then the old version's delete: more than one, fewer than batches
    commits = writer.store.versions([CHUNKS])[CHUNKS] - before
    assert 2 < commits <= chunks // 10 + 2
    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 100_000)
    whole = make_settings(tmp_path / "whole", tree_build=False)
    other = Writer(whole)
    ingest_text(other, other.store, "notes", note(2, 300), "vault.md")
    got, want = vectors(Store(streamed)), vectors(Store(whole))
    assert got.keys() == want.keys() and len(got) == chunks
    assert all(np.allclose(got[k], want[k], atol=1e-5) for k in want)


def test_a_write_stopped_at_shutdown_deletes_what_it_staged_and_keeps_the_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 8)
    settings = make_settings(tmp_path / "db", tree_build=False)
    stop = threading.Event()
    writer = Writer(settings, embedder=Recording(get_embedder(settings), stop, stop_after=4))  # type: ignore[arg-type]
    ingest_text(writer, writer.store, "notes", note(1, 20), "vault.md")
    before = {c.chunk_id for c in writer.store.find(Chunk, {"source_id": "notes"}, fields=[])}
    writer.abandon = stop  # set after a few batches were staged (committed) already
    with pytest.raises(ShuttingDown):
        ingest_text(writer, writer.store, "notes", note(2, 300), "vault.md")
    store = Store(settings)
    (document,) = store.find(Document, {"source_id": "notes", "key": "vault.md"})
    assert document.doc_id == content_hash(note(1, 20).encode())
    assert {c.chunk_id for c in store.find(Chunk, {"source_id": "notes"}, fields=[])} == before


def test_one_batch_size_set_in_one_place(tmp_path: Path) -> None:
    local = make_settings(tmp_path)
    assert embed_batch(local) == texts_per_call(local) == 2  # a local model's activations are the write's peak
    remote = make_settings(tmp_path, embed_provider="openai")
    assert (embed_batch(remote), texts_per_call(remote)) == (64, 256)  # as many texts as it sends at once (4)
