"""OCR reading order on two-column pages: a paper's pages scanned here, read in the recogniser's order and in
ocr.reading_order's (column by column), each scored by the share of the text layer's words recovered in order.

    python -m bench.pdf_ocr_order [--data ../shared/data/pdfs] [--paper 1508.04025.pdf] [--pages 2 3]

Each page is rendered at 150 dpi into an image-only PDF (a scan made here), then read as the parser
reads a scanned page (ocr.RENDER_SCALE, the same engine): one recognition a page, both orders
scored from it. A dense page costs tens of seconds of CPU.
"""

from __future__ import annotations

import argparse
import difflib
import io
import re
import time
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium

from bench.pdfs import DEFAULT_DATA
from thoth.writes.parsers.pdf import ocr


def _in_order(truth: list[str], words: list[str]) -> float:
    match = difflib.SequenceMatcher(None, truth, words, autojunk=False)
    return sum(block.size for block in match.get_matching_blocks()) / max(1, len(truth))


def score_page(page: pdfium.PdfPage) -> tuple[int, float, float, float]:
    """Words of the text layer, share recovered in order in the recogniser's and the reading order, seconds."""
    truth = re.findall(r"\w+", page.get_textpage().get_text_range())
    buf = io.BytesIO()
    page.render(scale=150 / 72).to_pil().convert("L").save(buf, format="PDF", resolution=150)
    scan = pdfium.PdfDocument(buf.getvalue())
    image = scan[0].render(scale=ocr.RENDER_SCALE).to_pil().convert("RGB")
    started = time.perf_counter()
    result = ocr.engine()(np.asarray(image))
    seconds = time.perf_counter() - started
    texts, scores = result.txts or (), result.scores or ()

    def words(order) -> list[str]:
        return re.findall(r"\w+", " ".join(texts[i] for i in order if scores[i] >= ocr.MIN_CONFIDENCE))

    ordered = ocr.reading_order(ocr.line_boxes(result.boxes), image.width)
    return len(truth), _in_order(truth, words(range(len(texts)))), _in_order(truth, words(ordered)), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pdf_ocr_order", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--paper", default="1508.04025.pdf", help="a two-column paper under --data/papers")
    parser.add_argument("--pages", type=int, nargs="+", default=[2, 3])
    args = parser.parse_args(argv)
    path = args.data / "papers" / args.paper
    if not path.is_file():
        print(f"skipped: no {path} (the benchmark data is optional)")
        return 0
    ocr.engine()  # the model load is not page time
    pdf = pdfium.PdfDocument(path.read_bytes())
    for number in args.pages:
        words, plain, ordered, seconds = score_page(pdf[number - 1])
        print(
            f"{args.paper} p. {number}: {words} words; in order: recogniser's order {plain:.1%}, "
            f"reading_order {ordered:.1%} ({seconds:.0f} s to recognise)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
