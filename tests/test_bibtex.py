"""BibTeX entries from PDF metadata and first pages; sidecars; the entries parse with a BibTeX parser."""

from __future__ import annotations

from pathlib import Path

import bibtexparser
import pytest

from examples.pdfgen import write_text_pdf
from thoth.bibtex import (
    Citation,
    escape,
    guess_from_first_page,
    make_entry,
    parse_reference,
    read_sidecar,
)
from thoth.writes.parsers import parse
from thoth.writes.prepare import citation_of

ARXIV_FIRST_PAGE = """arXiv:1502.03167v3 [cs.LG] 2 Mar 2015
Batch Normalization: Accelerating Deep Network Training by
Reducing Internal Covariate Shift
Sergey Ioffe
Google Inc., sioffe@google.com
Christian Szegedy
Google Inc., szegedy@google.com
Abstract
Training Deep Neural Networks is complicated by the fact"""

PERMISSION_FIRST = """Provided proper attribution is provided, Google hereby grants permission to
reproduce the tables and figures in this paper solely for use in journalistic or
scholarly works.
Attention Is All You Need
Ashish Vaswani∗
Google Brain
avaswani@google.com
Aidan N. Gomez∗ †
University of Toronto
Abstract"""


def parsed_entry(text: str) -> bibtexparser.model.Entry:
    library = bibtexparser.parse_string(text)
    assert not library.failed_blocks, text
    assert len(library.entries) == 1
    return library.entries[0]


def test_first_page_of_an_arxiv_paper() -> None:
    found = guess_from_first_page(ARXIV_FIRST_PAGE)
    assert found["title"] == (
        "Batch Normalization: Accelerating Deep Network Training by Reducing Internal Covariate Shift"
    )
    assert found["authors"] == ["Sergey Ioffe", "Christian Szegedy"]
    assert (found["year"], found["eprint"], found["primary_class"]) == (2015, "1502.03167", "cs.LG")


def test_title_after_a_notice_and_names_between_affiliations() -> None:
    found = guess_from_first_page(PERMISSION_FIRST)
    assert found["title"] == "Attention Is All You Need"
    assert found["authors"] == ["Ashish Vaswani", "Aidan N. Gomez"]


def test_prose_first_page_has_no_title() -> None:
    assert "title" not in guess_from_first_page("Lorem ipsum dolor sit amet, consetetur sadipscing elitr, sed diam.")


def test_entry_from_a_pdf_parses_with_its_fields(tmp_path: Path) -> None:
    path = write_text_pdf(tmp_path / "p.pdf", ["Body text of a report."], title="Costs & Benefits_2024 {draft}",
                          author="Zoë Müller; Bo Chan")  # fmt: skip
    doc = parse("p.pdf", path.read_bytes())
    entry = parsed_entry(make_entry(citation_of(doc, "p"), "a" * 64, note="doc://bucket/p.pdf?version_id=7"))
    assert entry.entry_type == "misc" and entry.key == "muller2000costs"
    assert entry.fields_dict["title"].value == r"Costs \& Benefits\_2024 \{draft\}"
    assert entry.fields_dict["author"].value == "Müller, Zoë and Chan, Bo"
    assert entry.fields_dict["year"].value == "2000"


def test_arxiv_entry_has_eprint_fields() -> None:
    cited = Citation(title="REALM", authors=["Kelvin Guu"], year=2020, eprint="2002.08909", primary_class="cs.CL")
    entry = parsed_entry(make_entry(cited, "b" * 64))
    assert entry.key == "guu2020realm"
    assert {k: entry.fields_dict[k].value for k in ("eprint", "archivePrefix", "primaryClass")} == {
        "eprint": "2002.08909",
        "archivePrefix": "arXiv",
        "primaryClass": "cs.CL",
    }


def test_untitled_anonymous_document_still_gets_a_valid_entry() -> None:
    entry = parsed_entry(make_entry(Citation(title="scan-0001"), "c" * 64))
    assert entry.key == "scan0001" and "author" not in entry.fields_dict


@pytest.mark.parametrize(("raw", "escaped"), [("50% of #1", r"50\% of \#1"), ("a\\b", r"a\textbackslash{}b"),
                                               ("  many   spaces\n", "many spaces")])  # fmt: skip
def test_escape(raw: str, escaped: str) -> None:
    assert escape(raw) == escaped


def test_sidecar_must_hold_an_entry() -> None:
    assert read_sidecar(b"@book{k, title={T}}\n") == "@book{k, title={T}}\n"
    assert read_sidecar(b"just a note") is None
    assert read_sidecar(b"@misc{k, title={unbalanced}") is None
    assert read_sidecar(b"\xff\xfe") is None


@pytest.mark.parametrize(
    ("entry", "title", "authors", "year", "eprint"),
    [
        (  # numbered, names first
            "[1] Jimmy Lei Ba, Jamie Ryan Kiros, and Geoffrey E Hinton. Layer normalization. "
            "arXiv preprint arXiv:1607.06450, 2016.",
            "Layer normalization",
            ["Jimmy Lei Ba", "Jamie Ryan Kiros", "Geoffrey E Hinton"],
            2016,
            "1607.06450",
        ),
        (  # initials first, a title with a colon
            "[20] D. P. Kingma and J. Ba. Adam: A method for stochastic optimization. In ICLR, 2015.",
            "Adam: A method for stochastic optimization",
            ["D. P. Kingma", "J. Ba"],
            2015,
            None,
        ),
        (  # surname first, the year in parentheses (ICLR's natbib)
            "Bengio, Y., Ducharme, R., Vincent, P., and Janvin, C. (2003). A neural probabilistic language "
            "model. J. Mach. Learn. Res., 3, 1137-1155.",
            "A neural probabilistic language model",
            ["Bengio, Y.", "Ducharme, R.", "Vincent, P.", "Janvin, C."],
            2003,
            None,
        ),
        (  # surname first, no parentheses: the title starts after the last initial
            "Graves, A., Wayne, G., and Danihelka, I. Neural turing machines. ArXiv, abs/1410.5401, 2014.",
            "Neural turing machines",
            ["Graves, A.", "Wayne, G.", "Danihelka, I."],
            2014,
            "1410.5401",
        ),
        (  # ACL: a bracketed key, the year after the names
            "[Luong et al.2015] M.-T. Luong, I. Sutskever, and W. Zaremba. 2015. Addressing the rare word "
            "problem in neural machine translation. In ACL.",
            "Addressing the rare word problem in neural machine translation",
            ["M.-T. Luong", "I. Sutskever", "W. Zaremba"],
            2015,
            None,
        ),
    ],
)
def test_a_reference_entry_gives_the_cited_work(entry, title, authors, year, eprint) -> None:
    cited = parse_reference(entry)
    assert cited is not None
    assert (cited.title, cited.authors, cited.year, cited.eprint) == (title, authors, year, eprint)


def test_an_entry_without_enough_gives_nothing() -> None:
    assert parse_reference("optimization. J. Mach. Learn. Res., 12:2121-2159, July") is None
    assert parse_reference("[4] Ann Lee. Notes on retrieval.") is None  # no year
