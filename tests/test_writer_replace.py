"""A changed document is replaced, never removed then added: readers searching while it is overwritten
always find it, and a writer killed mid-overwrite leaves it whole. Real LanceDB, the real model, real
processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from tests.conftest import REPO_ROOT, bm25, make_settings
from thoth.records import Chunk, Document
from thoth.store import Store
from thoth.store.maintenance import sweep_orphans
from thoth.store.schema import CHUNKS
from thoth.writes.documents import ingest_text
from thoth.writes.objects import SourceObject
from thoth.writes.writer import Writer


def version(n: int, paragraphs: int = 6) -> str:
    """A document whose every version mentions the zorbluxian ledger, each in other words around it."""
    body = "\n\n".join(
        f"Paragraph {i} of revision {n}: the zorbluxian quartermaster audits ledger {n * 100 + i} "
        f"and files report {i} of {paragraphs} for the kumquat depot, shelf {n}-{i}."
        for i in range(paragraphs)
    )
    return f"# Ledger revision {n}\n\n{body}\n"


def whole(store: Store, source_id: str, key: str) -> tuple[str, int]:
    """(the document's doc_id, its chunks) after checking it has one row and every chunk of one revision."""
    documents = store.find(Document, {"source_id": source_id, "key": key}, fields=["doc_id"])
    assert len(documents) == 1, documents
    chunks = store.find(Chunk, {"source_id": source_id, "doc_id": documents[0].doc_id}, fields=["chunk_index", "text"])
    assert sorted(c.chunk_index for c in chunks) == list(range(len(chunks))) and chunks
    revisions = {m for c in chunks for m in re.findall(r"revision (\d+)", c.text)}
    assert len(revisions) == 1, revisions  # one version's chunks, not a mix
    return documents[0].doc_id, len(chunks)


def read_while(settings, stop: threading.Event, source_id: str, misses: list[int], reads: list[int]) -> None:
    store = Store(settings)  # a reader of its own, as another server process would be
    while not stop.is_set():
        found = bm25(store, "zorbluxian", 5, {"source_id": source_id})
        reads.append(1)
        if not found:
            misses.append(1)
        time.sleep(0.02)


def overwrite_while_reading(settings, source_id: str, write) -> tuple[int, int]:
    stop, misses, reads = threading.Event(), [], []
    readers = [threading.Thread(target=read_while, args=(settings, stop, source_id, misses, reads)) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for n in range(2, 5):
            write(n)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    return len(misses), len(reads)


def test_a_document_overwritten_while_readers_search_is_always_found(tmp_path: Path) -> None:
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", version(1), "notes/ledger.md")
    first, _ = whole(writer.store, "notes", "notes/ledger.md")

    misses, reads = overwrite_while_reading(
        settings, "notes", lambda n: ingest_text(writer, writer.store, "notes", version(n), "notes/ledger.md")
    )
    assert reads > 10 and misses == 0
    last, _ = whole(writer.store, "notes", "notes/ledger.md")
    assert last != first
    assert writer.store.count_of(Chunk, {"source_id": "notes", "doc_id": first}) == 0  # the old version went
    assert "revision 4" in bm25(writer.store, "zorbluxian", 1, {"source_id": "notes"})[0].chunk.text


def test_an_object_replaced_by_an_event_is_always_found(tmp_path: Path) -> None:
    """A bucket event's write (Writer.write_keys, what thoth/writes/object_events.py calls) likewise."""
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)

    def event(n: int) -> None:
        data = version(n).encode()
        obj = SourceObject(key="ledger.md", uri="gs://b/ledger.md", size=len(data), read=lambda: data, version=str(n))
        writer.write_keys("b", [obj], {obj.key}, name="b", uri="gs://b")

    event(1)
    misses, reads = overwrite_while_reading(settings, "b", event)
    assert reads > 10 and misses == 0
    whole(writer.store, "b", "ledger.md")
    assert writer.store.count_of(Chunk, {"source_id": "b"}) == writer.store.count_of(
        Chunk, {"source_id": "b", "doc_id": whole(writer.store, "b", "ledger.md")[0]}
    )


OVERWRITER = textwrap.dedent(
    """
    import sys
    from dataclasses import replace
    from tests.conftest import make_settings
    from tests.test_writer_replace import version
    from thoth.writes.documents import ingest_text
    from thoth.writes.writer import Writer

    writer = Writer(replace(make_settings(sys.argv[1]), tree_build=False))
    print("ready", flush=True)
    n = 2
    while True:
        ingest_text(writer, writer.store, "notes", version(n, 30), "notes/ledger.md")
        n += 1
    """
)


def test_a_writer_killed_mid_overwrite_leaves_the_document_whole(tmp_path: Path) -> None:
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", version(1, 30), "notes/ledger.md")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    for delay in (0.3, 1.1, 2.3):  # a few points of the overwrite loop: embedding, writing, switching
        process = subprocess.Popen(
            [sys.executable, "-c", OVERWRITER, str(tmp_path / "db")], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE
        )
        assert process.stdout is not None and process.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        store = Store(settings)  # "after a restart": a new process's view
        doc_id, _ = whole(store, "notes", "notes/ledger.md")
        assert bm25(store, "zorbluxian", 3, {"source_id": "notes"})
        sweep_orphans(store, grace=timedelta(0))  # no write in flight: every orphan is a killed write's
        assert store.count_of(Chunk, {"source_id": "notes"}) == store.count_of(
            Chunk, {"source_id": "notes", "doc_id": doc_id}
        )
    # the next write after the kills replaces the document as usual
    ingest_text(Writer(settings), Store(settings), "notes", version(99, 30), "notes/ledger.md")
    whole(Store(settings), "notes", "notes/ledger.md")


def test_the_same_bytes_reparsed_replace_their_rows_and_are_never_missing(tmp_path: Path) -> None:
    """A newer parser (the stored `parser` differs from parser_version) re-reads unchanged bytes: the rows
    keep their doc_id, and are staged under another, then swapped in, so no version of the chunk table lacks
    the document."""
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    writer = Writer(settings)
    data = version(1).encode()
    obj = SourceObject(key="ledger.md", uri="gs://b/ledger.md", size=len(data), read=lambda: data, version="1")
    writer.write_keys("b", [obj], {obj.key}, name="b", uri="gs://b")
    doc_id, chunks = whole(writer.store, "b", "ledger.md")
    table = Store(settings).table(CHUNKS)  # a reader of its own, to look at every version after this one
    start = table.version

    writer.store.change(Document, {"source_id": "b", "key": "ledger.md"}, {"parser": "an-older-parser"})
    summary = writer.write_keys("b", [obj], {obj.key}, name="b", uri="gs://b")
    assert summary.ingested == ["ledger.md"]  # re-parsed although its bytes and generation are the same
    assert whole(writer.store, "b", "ledger.md") == (doc_id, chunks)
    (row,) = writer.store.find(Document, {"source_id": "b", "key": "ledger.md"}, fields=["parser"])
    assert row.parser == ""  # the current parser's version: the next run leaves it alone

    table.checkout_latest()
    seen = []
    for number in range(start, table.version + 1):
        table.checkout(number)
        seen.append(table.count_rows(f"doc_id = '{doc_id}'"))
    assert len(seen) > 1 and min(seen) == chunks, seen  # every version in between holds the whole document
