"""Headings from a PDF's own typography (thoth/writes/parsers/pdf/headings.py) on generated papers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from examples.pdfgen import write_paper_pdf
from thoth.writes.parsers import parse
from thoth.writes.parsers.pdf.headings import person_case

BODY = (
    "Retrieval augmented models read a corpus while they answer. They keep their parameters small and "
    "their knowledge fresh, because the corpus can change without training the model again. "
)


def _paths(path: Path) -> list[tuple[str, ...]]:
    doc = parse(path.name, path.read_bytes())
    return list(dict.fromkeys(tuple(p.heading_path) for p in doc.sections))


def test_small_caps_headings_neither_bold_nor_larger_are_found(tmp_path: Path) -> None:
    pages = [
        [("sc", "Abstract"), ("p", BODY), ("sc", "1 Introduction"), ("p", BODY * 2)],
        [("p", BODY), ("sc", "2 Related Work"), ("p", BODY * 2), ("sc", "2.1 Learning to Align"), ("p", BODY)],
        [("sc", "References"), ("p", "[1] Ann Lee. Dense passage retrieval. 2020.")],
    ]
    path = write_paper_pdf(tmp_path / "iclr.pdf", "A Paper Set In The ICLR Style", [("Ann Lee", "")], pages)
    doc = parse("iclr.pdf", path.read_bytes())
    assert _paths(path)[1:] == [
        ("Abstract",),
        ("1 Introduction",),
        ("2 Related Work",),
        ("2 Related Work", "2.1 Learning to Align"),  # the whole path
        ("References",),
    ]
    text = "\n".join(p.text for p in doc.sections)
    assert "RELATED WORK" not in text and "ELATED" not in text  # the heading is the path, not inline text
    assert [b.kind for p in doc.sections if p.heading_path == ["References"] for b in p.blocks] == ["references"]


def test_labels_inside_a_figure_and_list_items_are_not_headings(tmp_path: Path) -> None:
    pages = [
        [("h1", "1 Introduction"), ("p", BODY * 2), ("figure", "Figure 1: Accuracy per layer."), ("p", BODY)],
        [
            ("p", "We make three claims:\n1. Models read a corpus.\n2. Corpora change.\n3. Models stay small."),
            ("h1", "2 Method"),
            ("p", BODY),
        ],
    ]
    path = write_paper_pdf(tmp_path / "fig.pdf", "A Paper With A Figure", [("Ann Lee", "")], pages)
    assert _paths(path)[1:] == [("1 Introduction",), ("2 Method",)]
    text = "\n".join(p.text for p in parse("fig.pdf", path.read_bytes()).sections)
    assert "ViT-L/16" in text and "Figure 1: Accuracy per layer." in text  # the labels stay, with the caption


def test_an_unnumbered_paper_keeps_its_large_headings_but_not_a_figures_labels(tmp_path: Path) -> None:
    pages = [[("h1", "Overview"), ("p", BODY * 2), ("figure", "Figure 1: Accuracy."), ("h1", "Findings"), ("p", BODY)]]
    path = write_paper_pdf(tmp_path / "u.pdf", "An Unnumbered Report", [("Ann Lee", "")], pages)
    assert _paths(path)[1:] == [("Overview",), ("Findings",)]


def test_capitals_read_as_a_person_writes_them() -> None:
    words = Counter({"RNN": 5, "rnn": 0, "adam": 0, "Adam": 3})
    assert person_case("2.1 RNN ENCODER–DECODER", words) == "2.1 RNN Encoder–Decoder"
    assert (
        person_case("ADAM: A METHOD FOR STOCHASTIC OPTIMIZATION", words) == "Adam: A Method for Stochastic Optimization"
    )
    assert person_case("5 A STUDY OF THE MODEL", words) == "5 A Study of the Model"
    assert person_case("Attention Is All You Need", words) == "Attention Is All You Need"  # not in capitals


def test_a_title_in_capitals_keeps_its_typeset_form(tmp_path: Path) -> None:
    pages = [[("h1", "1 Introduction"), ("p", BODY * 2)]]
    title = "NEURAL MACHINE TRANSLATION BY JOINTLY LEARNING TO ALIGN"
    path = write_paper_pdf(tmp_path / "t.pdf", title, [("Ann Lee", "")], pages)
    doc = parse("t.pdf", path.read_bytes())
    assert doc.front_matter["title"] == "Neural Machine Translation by Jointly Learning to Align"
    assert doc.front_matter["title_typeset"] == title
