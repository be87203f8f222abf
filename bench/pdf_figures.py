"""PDF figures as pictures (thoth/writes/parsers/pdf/figures.py): their boxes against boxes written down by
hand, and what cutting them costs in parse time and storage.

    python -m bench.pdf_figures [--data ../shared/data/pdfs/papers] [--rounds 3]

- boxes: for each figure of bench/data/papers_figures.json, the intersection over union of the box the
  parser cut with the box written down by hand (a figure found under its label on its page);
- cost: every PDF under --data parsed with THOTH_PDF_FIGURES off and on, file by file alternating, after
  one untimed parse; CPU seconds of each and their ratio (on / off), the pictures' count and bytes, bytes
  per page. Figures are ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from thoth.writes.parsers import ParseError, parse

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs" / "papers"
TRUTH = Path(__file__).resolve().parent / "data" / "papers_figures.json"


def iou(a: list[float] | tuple, b: list[float] | tuple) -> float:
    dx = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    dy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = dx * dy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _boxes(data: Path) -> None:
    truth = json.loads(TRUTH.read_text())["figures"]
    found: dict[str, dict] = {}
    scores = []
    print(f"{'file':16s} {'figure':9s} {'page':>4s} {'IoU':>5s}  cut box")
    for figure in truth:
        path = data / figure["file"]
        if not path.is_file():
            continue
        if figure["file"] not in found:
            doc = parse(path.name, path.read_bytes(), pdf_figures=True)
            found[figure["file"]] = {(f.label, f.page): f for f in doc.figures.values()}
        cut = found[figure["file"]].get((figure["label"], figure["page"]))
        score = iou(cut.box, figure["box"]) if cut else 0.0
        scores.append(score)
        shown = [round(v) for v in cut.box] if cut else "NOT FOUND"
        print(f"{figure['file']:16s} {figure['label']:9s} {figure['page']:4d} {score:5.2f}  {shown}")
    if scores:
        good = sum(s >= 0.8 for s in scores)
        print(f"IoU >= 0.8: {good} of {len(scores)}; mean IoU {sum(scores) / len(scores):.2f}")


def _cost(files: list[Path], rounds: int) -> None:
    blobs = [p.read_bytes() for p in files]
    for figures in (False, True):  # untimed: imports and first calls are not page time
        parse(files[0].name, blobs[0], pdf_figures=figures)
    seconds = {False: 0.0, True: 0.0}
    pages = pictures = size = 0
    for round_ in range(rounds):
        for path, data in zip(files, blobs, strict=True):
            for figures in (False, True):
                started = time.process_time()
                try:
                    doc = parse(path.name, data, pdf_figures=figures)
                except ParseError:
                    continue
                seconds[figures] += time.process_time() - started
                if figures and round_ == 0:
                    pages += doc.page_count or 0
                    pictures += len(doc.figures)
                    size += sum(len(f.png) for f in doc.figures.values())
    off, on = seconds[False], seconds[True]
    print(f"{len(files)} PDFs, {pages} pages, {rounds} rounds, CPU seconds: figures off {off:.2f}, on {on:.2f}")
    print(f"parse with figures / without: {on / off:.2f}x")
    print(f"pictures: {pictures}, {size / 1e6:.2f} MB, {size / max(1, pictures) / 1e3:.0f} kB each, "
          f"{size / max(1, pages) / 1e3:.1f} kB per page")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pdf_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the cost (0: the boxes only)")
    args = parser.parse_args(argv)
    files = sorted(args.data.rglob("*.pdf")) if args.data.is_dir() else []
    if not files:
        print(f"skipped: no PDFs under {args.data} (the benchmark data is optional)")
        return
    _boxes(args.data)
    if args.rounds > 0:
        print()
        _cost(files, args.rounds)


if __name__ == "__main__":
    main()
