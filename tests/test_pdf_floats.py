"""Captions and footnotes (thoth/writes/parsers/pdf_floats.py) leave the running text on a generated paper."""

from __future__ import annotations

from pathlib import Path

from examples.pdfgen import write_paper_pdf
from thoth.writes.parsers import parse

BODY = "Retrieval augmented models read a corpus while they answer, and keep their parameters small. "


def test_a_float_and_a_footnote_do_not_cut_a_sentence(tmp_path: Path) -> None:
    pages = [
        [
            ("h1", "1 Introduction"),
            ("p", BODY * 3 + "Each candidate is scored by the log"),
            ("figure", "Figure 1: Accuracy per layer of the reader."),
            ("p", "probability the model gives it, summed over its tokens." + BODY),
            ("footnote", "1 The corpus is a snapshot of the encyclopedia from 2018."),
        ],
    ]
    path = write_paper_pdf(tmp_path / "f.pdf", "A Paper With Floats", [("Ann Lee", "")], pages)
    doc = parse("f.pdf", path.read_bytes())
    section = next(p for p in doc.sections if p.heading_path == ["1 Introduction"])
    kinds = {b.kind: b.text for b in section.blocks}
    assert "scored by the log probability the model gives it" in kinds["text"]  # the sentence reads on
    assert kinds["caption"].endswith("Figure 1: Accuracy per layer of the reader.")
    assert "ViT-L/16" in kinds["caption"] and "q(x)" in kinds["caption"]  # the figure's labels, with its caption
    assert kinds["footnote"] == "1 The corpus is a snapshot of the encyclopedia from 2018."
    assert "snapshot" not in kinds["text"] and "Figure 1" not in kinds["text"] and "q(x)" not in kinds["text"]


def test_an_algorithm_box_is_its_own_block_and_a_sentence_runs_over_a_page_break(tmp_path: Path) -> None:
    pages = [
        [
            ("h1", "1 Method"),
            ("p", BODY * 2),
            ("p", "Algorithm 1 Greedy decoding\n1: Input: a model and a prompt\n2: Output: the likeliest sequence"),
            *[("p", "")] * 3,  # the box is set apart by space
            ("p", BODY * 2 + "Each candidate is then scored by the log"),
        ],
        [("p", "probability the model gives it, summed over its tokens. " + BODY)],
    ]
    path = write_paper_pdf(tmp_path / "a.pdf", "A Paper With An Algorithm", [("Ann Lee", "")], pages)
    doc = parse("a.pdf", path.read_bytes())
    first = next(p for p in doc.sections if p.page_start == 1 and p.heading_path == ["1 Method"])
    box = next(b for b in first.blocks if b.kind == "algorithm")
    assert box.text.splitlines() == [
        "Algorithm 1 Greedy decoding",
        "1: Input: a model and a prompt",
        "2: Output: the likeliest sequence",
    ]
    text = first.blocks[0].text
    assert "Greedy" not in text
    # The sentence reads on over the page break, in the first page's partition, which now ends on page 2.
    assert text.endswith("scored by the log probability the model gives it, summed over its tokens.")
    assert (first.page_start, first.page_end) == (1, 2)
    second = next(p for p in doc.sections if p.page_start == 2)
    assert second.blocks[0].text.startswith("Retrieval augmented models")
