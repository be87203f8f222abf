"""Tables of a PDF (thoth/writes/parsers/pdf/tables.py) as partitions and chunks of Markdown tables, on
generated PDFs: a ruled table with a spanning header, an unruled one, a long one over a page break, and
one whose cells are sentences (its rules drawn as images)."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.pdfgen import (
    LONG_TABLE,
    RULED_TABLE,
    SENTENCE_TABLE,
    UNRULED_TABLE,
    write_sentence_table_pdf,
    write_tables_pdf,
)
from tests.conftest import make_settings
from thoth.embed import get_tokenizer
from thoth.embedders import get_embedder
from thoth.records import Chunk
from thoth.retrieval import pages, research
from thoth.store import Store
from thoth.writes.chunking import Chunker
from thoth.writes.parsers import ParsedDocument, parse
from thoth.writes.writer import Writer


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tables_pdf(tmp_path_factory.mktemp("tables") / "tables.pdf")


@pytest.fixture(scope="module")
def parsed(pdf: Path) -> ParsedDocument:
    return parse("tables.pdf", pdf.read_bytes())


def _tables(doc: ParsedDocument) -> list[tuple[int | None, int | None, str]]:
    return [(s.page_start, s.page_end, b.text) for s in doc.sections for b in s.blocks if b.kind == "table"]


def _grid(markdown: str) -> tuple[str, list[list[str]]]:
    """The caption and the rows of cells (header first, the delimiter row left out)."""
    caption, table = markdown.split("\n\n", 1)
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()]
    return caption, [r for r in rows if set("".join(r)) != {"-"}]


def test_each_table_is_a_partition_of_its_own_in_reading_order(parsed: ParsedDocument) -> None:
    tables = _tables(parsed)
    assert [t[2].split("\n")[0] for t in tables] == [
        RULED_TABLE["caption"],
        UNRULED_TABLE["caption"],
        LONG_TABLE["caption"],
    ]
    assert [(start, end) for start, end, _ in tables] == [(1, 1), (1, 1), (2, 3)]
    for section in parsed.sections:  # a table's partition holds the table alone
        kinds = {b.kind for b in section.blocks}
        assert kinds == {"table"} or "table" not in kinds
    running = " ".join(b.text for s in parsed.sections for b in s.blocks if b.kind != "table")
    assert "28.07" not in running and "sweep-42" not in running and "Dense retriever" not in running
    assert "Table 1." not in running and "Table 2:" not in running  # the captions went with their tables
    assert "held out test set" in running


def test_a_ruled_table_keeps_every_cell_in_its_column_and_repeats_a_spanning_header(parsed: ParsedDocument) -> None:
    caption, rows = _grid(_tables(parsed)[0][2])
    assert caption == RULED_TABLE["caption"]
    assert rows[0] == ["model", "error (%) top-1", "error (%) top-5", "params"]  # "error (%)" over two columns
    assert rows[1:] == RULED_TABLE["rows"]


def test_an_unruled_table_is_found_by_its_columns(parsed: ParsedDocument) -> None:
    caption, rows = _grid(_tables(parsed)[1][2])
    assert caption == UNRULED_TABLE["caption"]  # set under the table, read first
    assert rows == [*UNRULED_TABLE["header"], *UNRULED_TABLE["rows"]]


def test_a_table_over_a_page_break_is_one_table_without_the_repeated_header(parsed: ParsedDocument) -> None:
    caption, rows = _grid(_tables(parsed)[2][2])
    assert caption == LONG_TABLE["caption"]
    assert rows == [*LONG_TABLE["header"], *LONG_TABLE["rows"]]


def test_a_table_of_sentences_is_a_table_a_row_between_two_rules(tmp_path: Path) -> None:
    doc = parse("sentences.pdf", write_sentence_table_pdf(tmp_path / "sentences.pdf").read_bytes())
    [(_, _, table)] = _tables(doc)
    caption, rows = _grid(table)
    assert caption == SENTENCE_TABLE["caption"]  # set under the table, read first
    assert rows == [["", ""], *SENTENCE_TABLE["rows"]]  # no header row; each row's wrapped lines joined
    running = " ".join(b.text for s in doc.sections for b in s.blocks if b.kind != "table")
    assert "admitting privilege" not in running and "Table 4:" not in running
    assert running.count("held out test set") == 3  # the prose around it stays text


def test_a_long_table_repeats_caption_and_header_in_every_chunk(parsed: ParsedDocument) -> None:
    chunks = [c for c in Chunker(get_tokenizer(make_settings(Path("unused")))).chunk("t", parsed.sections)]
    tables = [c for c in chunks if c.content_type == "table"]
    long = [c for c in tables if c.text.startswith(LONG_TABLE["caption"])]
    assert len(long) >= 3 and len(tables) == len(long) + 2  # the two short tables: one chunk each
    head = f"{LONG_TABLE['caption']}\n\n| run | step | loss | accuracy |\n| --- | --- | --- | --- |\n"
    seen: list[str] = []
    for chunk in long:
        assert chunk.text.startswith(head) and (chunk.page_start, chunk.page_end) == (2, 3)
        seen += chunk.text[len(head) :].splitlines()
    assert seen == [f"| {' | '.join(row)} |" for row in LONG_TABLE["rows"]]  # every row once, in order
    assert not any("sweep-" in c.text for c in chunks if c.content_type != "table")


def test_tables_are_found_by_caption_and_cell_and_filtered_by_type(pdf: Path, tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "tables.pdf").write_bytes(pdf.read_bytes())
    settings = make_settings(tmp_path / "db")
    Writer(settings).run(str(folder), name="papers")
    store = Store(settings)
    assert "table" in {c.content_type for c in store.find(Chunk, {"source_id": "papers"}, fields=["content_type"])}

    def found(query: str, alpha: float, metadata: dict | None = None) -> list:
        return pages.search(
            store, settings, lambda: get_embedder(settings), query, alpha=alpha, limit=5, metadata=metadata
        ).hits

    by_cell = found("PReLU-net 24.27", 0.0, {"type": "table"})
    assert by_cell and all(h.hit.chunk.content_type == "table" for h in by_cell)
    assert "| PReLU-net | 24.27 | 7.38 | 60M |" in by_cell[0].hit.chunk.text
    by_caption = found("exact match on question answering benchmarks", 1.0, {"type": "table"})
    assert by_caption[0].hit.chunk.text.startswith(UNRULED_TABLE["caption"])
    # the research surface's search (tool `search`, argument content_type)
    cited = research.search(store, get_embedder(settings), "error rates of single models", content_type="table").hits
    assert cited and {c.hit.chunk.content_type for c in cited} == {"table"}
    assert cited[0].hit.chunk.text.startswith(RULED_TABLE["caption"])
