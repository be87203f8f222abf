"""The PDF generator keeps its promises (checked with pypdfium2, the parser ingest uses)."""

from __future__ import annotations

import sys
from pathlib import Path

import pypdfium2 as pdfium
import pytest

try:
    from examples import pdfgen
except ModuleNotFoundError:  # plain `pytest` (not `python -m pytest`) does not put the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from examples import pdfgen


def _texts(doc: pdfium.PdfDocument) -> list[str]:
    return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]


def _norm(text: str) -> str:
    """Collapse line breaks and runs of spaces (wrapping puts line breaks inside sentences)."""
    return " ".join(text.split())


PAGES = [
    "# First heading\n\n"
    + "Alpha paragraph one talks about the ingest job and THOTH_DB_URI. " * 3
    + "\n\nA second paragraph on page one with the number 8080.",
    "Bravo page two mentions reciprocal rank fusion and nothing from page one.",
    "Charlie page three.\nA line of its own.\n\nAnd a final paragraph.",
]


def test_text_pdf_pages_text_and_metadata(tmp_path):
    path = pdfgen.write_text_pdf(tmp_path / "sub" / "doc.pdf", PAGES, title="A title", author="An Author")
    assert path == tmp_path / "sub" / "doc.pdf" and path.is_file()
    with pdfium.PdfDocument(path) as doc:
        assert len(doc) == 3
        meta = doc.get_metadata_dict()
        assert meta["Title"] == "A title"
        assert meta["Author"] == "An Author"
        texts = _texts(doc)
    one, two, three = (_norm(t) for t in texts)
    assert one.startswith("First heading Alpha paragraph one")
    assert "THOTH_DB_URI" in one and "number 8080" in one and "reciprocal" not in one
    assert "reciprocal rank fusion" in two and "Alpha" not in two
    assert "Charlie page three. A line of its own. And a final paragraph." == three
    # long text is wrapped onto several lines, and the heading marker is not drawn
    assert texts[0].count("\n") >= 3
    assert "#" not in texts[0]


def test_text_pdf_without_metadata_and_deterministic(tmp_path):
    a = pdfgen.write_text_pdf(tmp_path / "a.pdf", ["same text"])
    b = pdfgen.write_text_pdf(tmp_path / "b.pdf", ["same text"])
    assert a.read_bytes() == b.read_bytes()
    with pdfium.PdfDocument(a) as doc:
        assert doc.get_metadata_dict().get("Title", "") == ""
        assert doc.get_metadata_dict().get("Author", "") == ""


def test_text_pdf_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError):
        pdfgen.write_text_pdf(tmp_path / "empty.pdf", [])
    with pytest.raises(TypeError):
        pdfgen.write_text_pdf(tmp_path / "str.pdf", "not a list")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        pdfgen.write_text_pdf(tmp_path / "huge.pdf", ["word " * 20000])


def test_encrypted_pdf_needs_its_password(tmp_path):
    path = pdfgen.write_text_pdf(
        tmp_path / "secret.pdf", ["Secret page one.", "Secret page two."], title="Secret", password="s3cret"
    )
    for wrong in (None, "", "wrong"):
        with pytest.raises(pdfium.PdfiumError):
            pdfium.PdfDocument(path, password=wrong)
    with pdfium.PdfDocument(path, password="s3cret") as doc:
        assert len(doc) == 2
        assert doc.get_metadata_dict()["Title"] == "Secret"
        assert [_norm(t) for t in _texts(doc)] == ["Secret page one.", "Secret page two."]
    # deterministic even when encrypted
    again = pdfgen.write_text_pdf(
        tmp_path / "again.pdf", ["Secret page one.", "Secret page two."], title="Secret", password="s3cret"
    )
    assert again.read_bytes() == path.read_bytes()


def test_image_only_pdf_has_no_text(tmp_path):
    path = pdfgen.write_image_only_pdf(tmp_path / "scan.pdf", pages=3)
    with pdfium.PdfDocument(path) as doc:
        assert len(doc) == 3
        assert _texts(doc) == ["", "", ""]
        assert all(doc[i].get_textpage().count_chars() == 0 for i in range(3))
        kinds = {obj.type for obj in doc[0].get_objects()}
        assert pdfium.raw.FPDF_PAGEOBJ_IMAGE in kinds
        assert pdfium.raw.FPDF_PAGEOBJ_TEXT not in kinds


def test_truncated_pdf_cannot_be_opened(tmp_path):
    path = pdfgen.write_truncated_pdf(tmp_path / "cut.pdf")
    assert path.stat().st_size > 0
    assert path.read_bytes().startswith(b"%PDF-")
    with pytest.raises(pdfium.PdfiumError):
        pdfium.PdfDocument(path)


def test_demo_collection(tmp_path):
    assert pdfgen.main([str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("*.pdf"))
    assert written == sorted(pdfgen.DEMO_DOCUMENTS)
    for name, spec in pdfgen.DEMO_DOCUMENTS.items():
        with pdfium.PdfDocument(tmp_path / name) as doc:
            assert 3 <= len(doc) <= 6 and len(doc) == len(spec["pages"])
            meta = doc.get_metadata_dict()
            assert meta["Title"] == spec["title"] and meta["Author"] == spec["author"]
            texts = [_norm(t) for t in _texts(doc)]
        assert all(len(t) > 300 for t in texts)
        assert len(set(texts)) == len(texts)
    # a distinctive fact lands on one specific page
    with pdfium.PdfDocument(tmp_path / "thoth-ops-report-ingest.pdf") as doc:
        pages_with_code = [i for i, t in enumerate(_texts(doc)) if "THOTH-E1042" in t]
    assert pages_with_code == [4]


def test_main_usage_error(capsys):
    assert pdfgen.main([]) == 2
    assert "usage" in capsys.readouterr().err
