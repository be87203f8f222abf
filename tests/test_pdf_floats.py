"""Captions and footnotes (thoth/writes/parsers/pdf/floats.py) leave the running text on a generated paper."""

from __future__ import annotations

from pathlib import Path

from bench.pdf_fidelity import _hyphens_cut
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


def test_a_ruled_table_between_a_hyphen_and_its_word_goes_with_its_caption(tmp_path: Path) -> None:
    # Its rows are as long as a sentence's line, but numbers and cells ("Top-1", "7.96%") are no words:
    # the table is a float, and the word cut at the page's end reads whole over it.
    pages = [
        [("h1", "1 Conclusion"), ("p", BODY * 3 + "\nIt is based on the premise that the shift also ap-")],
        [
            ("table", "Table 4: Single crop error rates of the compared models."),
            ("p", "plies to sub-networks and layers, and removing it may aid in training. " + BODY),
        ],
    ]
    path = write_paper_pdf(tmp_path / "t.pdf", "A Paper With A Table", [("Ann Lee", "")], pages)
    doc = parse("t.pdf", path.read_bytes())
    first = next(p for p in doc.sections if p.page_start == 1 and p.heading_path == ["1 Conclusion"])
    assert first.blocks[0].text.endswith(
        "the shift also applies to sub-networks and layers, and removing it may aid in training."
    )
    assert (first.page_start, first.page_end) == (1, 2)
    second = next(p for p in doc.sections if p.page_start == 2)
    caption = next(b.text for b in second.blocks if b.kind == "caption")
    assert caption.startswith("Model Resolution Crops Models Top-1 error Top-5 error GoogLeNet ensemble")
    assert caption.endswith("5.98% Table 4: Single crop error rates of the compared models.")
    running = " ".join(b.text for s in doc.sections for b in s.blocks if b.kind == "text")
    assert "GoogLeNet" not in running and "ap-" not in running


def test_the_fidelity_measure_counts_a_hyphen_cut_word_that_runs_into_a_float() -> None:
    # PDFium marks the break hyphen U+0002 and draws what comes next after it: here the page number.
    raw = ["the premise that the shift, also ap\x027", "known to com\x02plicate the training, a k\x02Simplex"]
    whole = "the premise that the shift, also applies to layers. known to complicate the training, a k-Simplex"
    assert _hyphens_cut(raw, whole) == 0
    assert _hyphens_cut(raw, whole.replace("applies", "ap-Model Resolution 224 plies")) == 1
    footnote = ["we train for 10 epochs us\x0212All texts are tokenized"]
    assert _hyphens_cut(footnote, "we train for 10 epochs us-12All texts are tokenized") == 1


def test_a_footnote_under_a_hyphen_cut_line_is_its_own_block(tmp_path: Path) -> None:
    # PDFium gives no line break after a line-break hyphen: the footnote set right under the line (in
    # another size) ended up on it, "us-12All texts", until a change of size under the hyphen ended the line.
    pages = [
        [
            ("h1", "1 Training"),
            ("p", BODY * 28 + "\nWe train for ten epochs us-"),
            ("note", "12 All texts are tokenized."),
        ],
        [("p", "ing plain stochastic gradient descent. " + BODY)],
    ]
    path = write_paper_pdf(tmp_path / "n.pdf", "A Paper With A Footnote", [("Ann Lee", "")], pages)
    doc = parse("n.pdf", path.read_bytes())
    first = next(p for p in doc.sections if p.page_start == 1 and p.heading_path == ["1 Training"])
    assert first.blocks[0].text.endswith("We train for ten epochs using plain stochastic gradient descent.")
    assert [b.text for b in first.blocks if b.kind == "footnote"] == ["12All texts are tokenized."]
