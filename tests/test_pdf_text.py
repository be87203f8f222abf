"""PDF text cleaning (thoth/writes/parsers/pdf/text.py): each rule on strings and through generated PDFs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from examples.pdfgen import write_symbol_font_pdf
from thoth.writes.parsers import parse
from thoth.writes.parsers.pdf.text import (
    attach_accents,
    clean_text,
    drop_controls,
    has_controls,
    join_hyphens,
    symbol_glyph,
    unfold_compat,
    vocabulary,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the knowl\x02edge of", "the knowledge of"),  # PDFium's line-break hyphen (FPDFText_GetUnicode)
        ("the knowl\ufffeedge of", "the knowledge of"),  # the same hyphen as get_text_range writes it
        ("the knowl-\nedge of", "the knowledge of"),  # a hyphen at a line end, lower-case continuation
        ("English\x02to-German", "English-to-German"),  # part of a longer compound
        ("state-of-the\x02art", "state-of-the-art"),
        ("Retrieval\x02Augmented", "Retrieval-Augmented"),  # a capital after the break: a compound
        ("pages 4\x0216", "pages 4-16"),  # not between letters: a plain hyphen
        ("differ\x02\nentiating", "differentiating"),  # the hyphen's line ended where the text jumps away
        ("news-test\x02\n2012", "news-test-2012"),
        ("a state-of-the-art model", "a state-of-the-art model"),  # real hyphens stay
    ],
)
def test_line_break_hyphens(text: str, expected: str) -> None:
    assert join_hyphens(text) == expected


def test_the_document_decides_between_a_word_and_a_compound() -> None:
    vocab = vocabulary("a mini-batch of data; sequence-aligned models; networks of networks")
    assert join_hyphens("each mini\x02batch", vocab) == "each mini-batch"
    assert join_hyphens("sequence\x02aligned", vocab) == "sequence-aligned"
    assert join_hyphens("deep net\x02works", vocab) == "deep networks"
    assert join_hyphens("pre\x02train the model", vocabulary("pre and train")) == "pre-train the model"
    # a capital after the break: whole where the text writes the name whole, a compound otherwise
    assert join_hyphens("Detect\x02GPT scores", vocabulary("we call it DetectGPT.")) == "DetectGPT scores"
    assert join_hyphens("Retrieval\x02Augmented", vocabulary("DetectGPT")) == "Retrieval-Augmented"
    # fragments at a break never count as words of the document
    assert "knowl" not in vocabulary("knowl\x02edge and knowl-\nedge")


def test_compatibility_forms_unfold_but_meaningful_ones_stay() -> None:
    assert unfold_compat("e\ufb03cient \ufb01eld\u00a0x") == "efficient field x"  # ligatures, no-break space
    assert unfold_compat("ＡＢＣ") == "ABC"  # full-width forms
    assert unfold_compat("x² ½ ℓ") == "x² ½ ℓ"  # superscripts, fractions and math letters keep their meaning


def test_control_characters_are_dropped_or_mapped() -> None:
    assert drop_controls("a\x00b\x0fc\x1fd\te\nf\x0cg\rh") == "abcd\te\nf\ng\nh"
    assert not has_controls(clean_text("x \x00 \x01 \x14 \x0f y\x02z\x7f"))
    assert has_controls("a\x0fb") and not has_controls("a\tb\nc")
    assert symbol_glyph(0x0F, "ABCDEF+CMSY10") == "•"
    assert symbol_glyph(0x14, "CMEX10") == "["
    assert symbol_glyph(0x0F, "Helvetica") == ""


def test_accents_set_apart_by_tex_are_attached() -> None:
    assert attach_accents("G \u0308ulc \u0327ehre") == "Gülçehre"


def _pdf(draw) -> bytes:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=1)
    c.setFont("Helvetica", 10)
    draw(c)
    c.showPage()
    c.save()
    return buf.getvalue()


def _text(data: bytes) -> str:
    return " ".join(b.text for p in parse("t.pdf", data).sections for b in p.blocks)


def test_hyphen_at_a_line_end_in_a_pdf_joins_the_word() -> None:
    def draw(c: canvas.Canvas) -> None:
        for i, line in enumerate(
            ["Models store world knowl-", "edge in their weights; a mini-", "batch is a", "mini-batch."]
        ):
            c.drawString(72, 700 - 12 * i, line)

    text = _text(_pdf(draw))
    assert "knowledge" in text and "knowl" not in text.replace("knowledge", "")
    assert "a mini-batch is a mini-batch." in text  # the document writes it with its hyphen
    assert not has_controls(text)


def test_symbol_font_codes_leave_no_control_characters(tmp_path: Path) -> None:
    # A TeX symbol font maps its bullet to code 0x0F; PDFium has no Unicode for it.
    cmsy = write_symbol_font_pdf(tmp_path / "cmsy.pdf", "items ~ first", font_name="CMSY10")
    other = write_symbol_font_pdf(tmp_path / "other.pdf", "items ~ first", font_name="Foo-Regular")
    assert _text(cmsy.read_bytes()) == "items • first"
    # a code no table names stays visible as a placeholder, and the document counts it
    assert _text(other.read_bytes()) == "items \ufffd first"
    assert parse("o.pdf", other.read_bytes()).unmapped_glyphs == 1


def test_math_italic_epsilon_and_a_starred_symbol_are_kept(tmp_path: Path) -> None:
    # Adam's epsilon: cmmi10 draws it at code 0x0F, which PDFium leaves as a control character
    cmmi = write_symbol_font_pdf(tmp_path / "cmmi.pdf", "beta2 = 0.999 and ~ = 10", font_name="CMMI10")
    assert _text(cmmi.read_bytes()) == "beta2 = 0.999 and \u03f5 = 10"

    def draw(c: canvas.Canvas) -> None:
        text = c.beginText(72, 700)
        for word, mark in [("the optimum x", "*"), (" is found by Bengio", "*"), (" here", "")]:
            text.setFont("Helvetica", 10)
            text.textOut(word)
            if mark:
                text.setFont("Helvetica", 6)
                text.setRise(4)
                text.textOut(mark)
                text.setRise(0)
        c.drawText(text)

    assert _text(_pdf(draw)) == "the optimum x* is found by Bengio* here"  # both stars stay: the page shows them


def test_an_accent_drawn_apart_lands_on_its_letter() -> None:
    def draw(c: canvas.Canvas) -> None:  # TeX's way: the letter, then the accent drawn over it
        c.drawString(72, 700, "Universite de Montreal")

        def width(text: str) -> float:
            return c.stringWidth(text, "Helvetica", 10)

        for prefix in ("Universit", "Universite de Montr"):
            x = 72 + width(prefix) + width("e") / 2 - width("\xb4") / 2
            c.drawString(x, 700, "\xb4")

    assert _text(_pdf(draw)) == "Université de Montréal"


def test_footnote_marks_after_words_stay_raised() -> None:
    # a footnote number is a character the page shows: kept, as a superscript so the word reads whole
    def draw(c: canvas.Canvas) -> None:
        text = c.beginText(72, 700)
        for word, mark in [("Residual nets won the competitions", "1"), (" of 2015, see", "∗"), (" x", "")]:
            text.setFont("Helvetica", 10)
            text.textOut(word)
            if mark:
                text.setFont("Helvetica", 6)
                text.setRise(4)
                text.textOut(mark.replace("∗", "*"))
                text.setRise(0)
        c.drawText(text)

    assert _text(_pdf(draw)) == "Residual nets won the competitions\u00b9 of 2015, see* x"


def test_a_character_outside_the_basic_plane_is_one_character(tmp_path: Path) -> None:
    # PDFium hands over an emoji as two UTF-16 halves; the ToUnicode map here names U+1F600 by its pair
    pdf = write_symbol_font_pdf(tmp_path / "e.pdf", "ok ~ done", font_name="Foo-Regular", codes={"~": 0xD83DDE00})
    assert _text(pdf.read_bytes()) == "ok \U0001f600 done"


def test_a_page_number_under_a_hyphen_at_the_page_end_stays_out_of_the_word() -> None:
    # PDFium writes no line break after a line-break hyphen, so the page number under the page's last
    # line came next in the same line: 'high-2 way networks'
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    body = ["Residual learning eases the training of deep networks in our experiments."] * 30
    for number, lines in [(1, [*body, "In addition, high-"]), (2, ["way networks have not shown such gains.", *body])]:
        c.setFont("Helvetica", 10)
        for i, line in enumerate(lines):
            c.drawString(72, 760 - 14 * i, line)
        c.drawString(297, 40, str(number))
        c.showPage()
    c.save()
    text = _text(buf.getvalue())
    assert "In addition, highway networks have not shown such gains." in text
