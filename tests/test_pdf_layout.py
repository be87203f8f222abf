"""A paper's layout (thoth/writes/parsers/pdf/layout.py) on a generated paper, and the parser version in identity."""

from __future__ import annotations

import gc
from pathlib import Path

import bibtexparser
import pytest

from examples.pdfgen import write_paper_pdf, write_text_pdf
from tests.conftest import make_settings
from thoth.bibtex import make_entry
from thoth.records import Chunk, Document
from thoth.store import Store
from thoth.store.schema import CHUNKS, DOCUMENTS
from thoth.writes.parsers import ParseError, parse, parser_version
from thoth.writes.parsers import pdf as pdf_parser
from thoth.writes.prepare import citation_of
from thoth.writes.writer import Writer

BODY = (
    "Retrieval augmented models read a corpus while they answer. They keep their parameters small and "
    "their knowledge fresh, because the corpus can change without training the model again. "
)
PAGES = [
    [("h1", "Abstract"), ("p", BODY * 2), ("h1", "1 Introduction"), ("p", BODY * 3)],
    [("p", BODY * 2), ("h1", "2 Method"), ("p", BODY), ("h2", "2.1 Training the Retriever"), ("p", BODY * 3)],
    [("p", BODY * 2), ("h2", "2.2 Inference"), ("p", BODY * 2)],
    [
        ("h1", "References"),
        ("p", "[1] Ann Lee and Bo Chan. Dense passage retrieval for open-domain question answering. 2020."),
        ("p", "[2] Kim Park. Language models as knowledge bases. 2019."),
    ],
]
STAMP = "arXiv:2002.08909v3 [cs.CL] 7 Jun 2021"
HEADER = "Retrieval Models That Read: A Study"


@pytest.fixture(scope="module")
def paper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_paper_pdf(
        tmp_path_factory.mktemp("paper") / "paper.pdf",
        title="Retrieval Models That Read: A Study",
        authors=[("Ann Lee", "*1"), ("Bo Chan", "2"), ("Kim Park", "†")],
        pages=PAGES,
        stamp=STAMP,
        header=HEADER,
    )


def test_furniture_is_left_out_of_the_text(paper: Path) -> None:
    doc = parse("paper.pdf", paper.read_bytes())
    text = "\n".join(p.text for p in doc.sections)
    assert "arXiv:" not in text  # the rotated margin stamp
    assert HEADER not in "\n".join(p.text for p in doc.sections if p.page_start > 1)  # the running header
    for partition in doc.sections:  # page numbers: no partition ends with its page's number
        assert not partition.text.rstrip().endswith(f" {partition.page_start}")


def test_sections_become_heading_paths_and_references_are_marked(paper: Path) -> None:
    doc = parse("paper.pdf", paper.read_bytes())
    paths = [(p.page_start, tuple(p.heading_path)) for p in doc.sections]
    assert (1, ("Abstract",)) in paths and (1, ("1 Introduction",)) in paths
    assert (2, ("1 Introduction",)) in paths  # a section carries on onto the next page
    assert (2, ("2 Method", "2.1 Training the Retriever")) in paths
    assert (3, ("2 Method", "2.2 Inference")) in paths
    references = [p for p in doc.sections if p.heading_path == ["References"]]
    assert [b.kind for p in references for b in p.blocks] == ["references"]
    assert references[0].text.splitlines() == [
        "[1] Ann Lee and Bo Chan. Dense passage retrieval for open-domain question answering. 2020.",
        "[2] Kim Park. Language models as knowledge bases. 2019.",
    ]
    for partition in doc.sections:  # a heading is the path, not body text
        assert not partition.text.startswith(tuple(partition.heading_path[-1:]))


def test_true_bibtex_from_the_first_page(paper: Path) -> None:
    doc = parse("paper.pdf", paper.read_bytes())
    cited = citation_of(doc, "paper")
    assert cited.title == "Retrieval Models That Read: A Study"
    assert cited.authors == ["Ann Lee", "Bo Chan", "Kim Park"]  # superscript marks dropped
    # the year of the first version (the id's yymm), not of v3's date nor of the file's CreationDate
    assert (cited.year, cited.eprint, cited.primary_class) == (2020, "2002.08909", "cs.CL")
    entry = bibtexparser.parse_string(make_entry(cited, "a" * 64)).entries[0]
    assert entry.key == "lee2020retrieval"
    assert entry.fields_dict["archivePrefix"].value == "arXiv"
    assert entry.fields_dict["author"].value == "Lee, Ann and Chan, Bo and Park, Kim"


def test_a_doi_on_the_first_page_goes_in_doi(tmp_path: Path) -> None:
    pages = [[("h1", "Abstract"), ("p", BODY + "Published as doi:10.1145/3397271.3401075.")]]
    path = write_paper_pdf(tmp_path / "d.pdf", "A Paper With A Digital Object Identifier", [("Ann Lee", "")], pages)
    cited = citation_of(parse("d.pdf", path.read_bytes()), "d")
    assert cited.doi == "10.1145/3397271.3401075"
    assert "doi = {10.1145/3397271.3401075}" in make_entry(cited, "b" * 64)


def test_parser_version_is_part_of_a_documents_identity(paper: Path, tmp_path: Path) -> None:
    version = parser_version("x/paper.PDF")
    assert version.startswith("pdf-") and parser_version("notes.md") == "" and parser_version("a.pdf", "html") == ""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    (folder / "paper.pdf").write_bytes(paper.read_bytes())
    settings = make_settings(tmp_path / "db")
    Writer(settings).run(str(folder), name="pdfs")
    store = Store(settings)
    assert [d.parser for d in store.find(Document, {"source_id": "pdfs"})] == [version]
    chunks = store.find(Chunk, fields=["text", "section", "content_type"])
    assert {c.content_type for c in chunks} == {"text", "references"}
    assert any("2.1 Training the Retriever" in c.section for c in chunks)

    # An index an older parser wrote (its rows say so): the next run re-parses the unchanged file once.
    store.table(DOCUMENTS).update(where="key = 'paper.pdf'", values={"parser": "pdf-1"})
    store.table(CHUNKS).update(values={"text": "stale text from the old parser"})
    again = Writer(settings).run(str(folder), name="pdfs")
    assert again.ingested == ["paper.pdf"]
    store = Store(settings)
    assert sorted(c.chunk_id for c in store.find(Chunk, fields=[])) == sorted(c.chunk_id for c in chunks)
    assert not [c for c in store.find(Chunk, fields=["text"]) if c.text.startswith("stale")]
    versions = store.versions()
    third = Writer(settings).run(str(folder), name="pdfs")
    assert third.ingested == [] and Store(settings).versions() == versions  # idempotent again


def test_pages_that_repeat_one_line_keep_it(tmp_path: Path) -> None:
    # Three one-line pages that say the same thing: their text, not a running header.
    path = write_text_pdf(
        tmp_path / "r.pdf", [f"Report 1, page {p}: the station measured {p} cm of rain." for p in range(3)]
    )
    doc = parse("r.pdf", path.read_bytes())
    assert [p.text for p in doc.sections] == [
        f"Report 1, page {p}: the station measured {p} cm of rain." for p in range(3)
    ]


def test_a_stamp_like_line_in_the_references_is_kept(tmp_path: Path) -> None:
    # A reference that wraps before its arXiv id: the id line is short and looks like the margin stamp.
    pages = [
        [("h1", "1 Introduction"), ("p", BODY * 3), ("p", "Table 1 runs on.\nContinued on next page")],
        [
            ("h1", "References"),
            ("p", "[1] Kelvin Guu. Retrieval-augmented language model pre-training. arXiv\npreprint arXiv:2002.08909."),
            ("p", "[2] Kim Park. Language models as knowledge bases. 2019."),
        ],
    ]
    path = write_paper_pdf(tmp_path / "s.pdf", "A Paper That Cites", [("Ann Lee", "")], pages, stamp=STAMP)
    doc = parse("s.pdf", path.read_bytes())
    references = [p for p in doc.sections if p.heading_path == ["References"]][0]
    assert references.text.splitlines()[0].endswith("pre-training. arXiv preprint arXiv:2002.08909.")
    text = "\n".join(p.text for p in doc.sections)
    assert STAMP not in text and "Table 1 runs on." in text and "Continued on next page" not in text


def test_a_reference_list_without_a_heading_is_found_by_its_entries(tmp_path: Path) -> None:
    entries = "\n".join(
        f"[{i}] Ann Lee. Retrieval study number {i}. arXiv preprint arXiv:2002.0890{i}, 2020." for i in range(1, 5)
    )
    pages = [[("h1", "1 Introduction"), ("p", BODY * 3)], [("p", BODY * 2), ("p", entries)]]
    path = write_paper_pdf(tmp_path / "n.pdf", "A Paper Without A References Heading", [("Ann Lee", "")], pages)
    doc = parse("n.pdf", path.read_bytes())
    marked = [b for p in doc.sections for b in p.blocks if b.kind == "references"]
    assert len(marked) == 1 and marked[0].text.splitlines()[0].startswith("[1] Ann Lee.")
    assert [x[-len("2002.08904, 2020.") :] for x in marked[0].text.splitlines()][-1] == "2002.08904, 2020."
    assert not any("[1]" in b.text for p in doc.sections for b in p.blocks if b.kind == "text")


def test_the_cyclic_collector_is_paused_during_a_parse_and_restored_after(
    paper: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pdf.py pauses Python's cyclic collector while it parses (speed); it must come back as it was."""
    seen: list[bool] = []
    real = pdf_parser.read_lines

    def watching(*args):  # the real reader, noting the collector's state as each page is read
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(pdf_parser, "read_lines", watching)
    assert gc.isenabled()
    parse("paper.pdf", paper.read_bytes())
    assert seen and not any(seen) and gc.isenabled()
    with pytest.raises(ParseError):
        parse("broken.pdf", b"%PDF-1.4 not a pdf")
    assert gc.isenabled()
    gc.disable()
    try:
        parse("paper.pdf", paper.read_bytes())
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()
