"""A document's glyphs without Unicode (kept in its text as U+FFFD) are counted in its `documents` row and
shown on the console's document page; an index written before that column existed still reads, and the
next ingest adds the column. Real PDFs, the real writer and model, LanceDB in a temp folder, a real server."""

from __future__ import annotations

import html
import re
from pathlib import Path

import lancedb

from examples.pdfgen import write_symbol_font_pdf
from tests.conftest import LOOPBACK, LiveServer, make_settings
from thoth.records import Document
from thoth.store import Store
from thoth.store.schema import META_INDEX_FORMAT
from thoth.writes.writer import Writer


def _documents(store: Store) -> dict[str, Document]:
    return {d.key: d for d in store.find(Document, {"source_id": "papers"})}


def _page_words(live: LiveServer, doc_id: str) -> str:
    """The console's document page as a reader sees it: its words, tags left out."""
    response = LOOPBACK.get(f"{live.url}/ui/documents/{doc_id}", params={"collection": "papers"}, timeout=60)
    assert response.status_code == 200, response.text
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.text)).split())


def test_unmapped_glyphs_are_counted_per_document_and_an_older_index_still_reads(tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    # a font no table knows draws '~' at a control code: two glyphs without Unicode; cmsy's is mapped (•)
    write_symbol_font_pdf(folder / "odd.pdf", "items ~ first ~ last", font_name="Foo-Regular")
    write_symbol_font_pdf(folder / "tex.pdf", "items ~ first", font_name="CMSY10")
    settings = make_settings(tmp_path / "db")
    summary = Writer(settings).run(str(folder), name="papers")
    assert not summary.failed, summary.render()

    docs = _documents(Store(settings))
    assert docs["odd.pdf"].unmapped_glyphs == 2
    assert docs["tex.pdf"].unmapped_glyphs == 0
    with LiveServer(settings) as live:
        assert "Unmapped glyphs 2 (glyphs without Unicode" in _page_words(live, docs["odd.pdf"].doc_id)
        assert "Unmapped glyphs" not in _page_words(live, docs["tex.pdf"].doc_id)

    # an index written before the column existed: its rows read None, and the next ingest adds the column
    # (thoth.store.migration)
    lancedb.connect(settings.db_uri).open_table("documents").drop_columns(["unmapped_glyphs"])
    Store(settings).delete_settings([META_INDEX_FORMAT])  # written before formats were recorded
    docs = _documents(Store(settings))
    assert docs["odd.pdf"].unmapped_glyphs is None and docs["odd.pdf"].title
    write_symbol_font_pdf(folder / "new.pdf", "one ~ more", font_name="Foo-Regular")
    Writer(settings).run(str(folder), name="papers")
    docs = _documents(Store(settings))
    assert docs["new.pdf"].unmapped_glyphs == 1 and docs["odd.pdf"].unmapped_glyphs is None
