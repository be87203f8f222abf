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
