"""Whether a parser change left its output alone: every PDF's parse, dumped as JSON lines, and two dumps compared.

    python -m bench.pdf_same dump OUT [--data ../shared/data/pdfs]   (with PYTHONPATH at the code to dump)
    python -m bench.pdf_same diff A B                                 (each differing file, its first field)

A speed change to the PDF parser must not change what it reads: dump with the base checkout's code
(`cd ../main && PYTHONPATH=$PWD python ../wt/bench/pdf_same.py dump /tmp/base.jsonl`: this file, run
against the other checkout's `thoth` and `bench.pdfs`), dump with yours, and diff. Every field of the
parsed document is compared (sections with their blocks, heading paths and pages, title, authors,
front matter, unmapped glyphs), or a file's parse error. OCR stays off. A section field that is None
on every text page (`ocr_confidence`, added later) is left out, so a dump of older code compares.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from bench.pdfs import DEFAULT_DATA, _manifest
from thoth.writes.parsers import ParseError, parse

_LATER_FIELDS = ("ocr_confidence",)


def dump(data: Path, out: Path) -> int:
    passwords = {k: row["password"] for k, row in _manifest(data).items() if row.get("password")}
    with out.open("w") as handle:
        files = sorted(data.rglob("*.pdf"))
        for path in files:
            name = str(path.relative_to(data))
            try:
                doc = dataclasses.asdict(parse(path.name, path.read_bytes(), pdf_password=passwords.get(name)).whole())
                doc.pop("rest")  # read into the sections
                for section in doc["sections"]:
                    for key in _LATER_FIELDS:
                        if section.get(key, 0) is None:
                            del section[key]
            except ParseError as exc:
                doc = {"error": str(exc)}
            handle.write(json.dumps({"file": name, **doc}, ensure_ascii=False, default=str, sort_keys=True) + "\n")
    return len(files)


def diff(a: Path, b: Path) -> int:
    """How many files differ; each printed with the first field that does."""
    left = {d["file"]: d for d in map(json.loads, a.read_text().splitlines())}
    right = {d["file"]: d for d in map(json.loads, b.read_text().splitlines())}
    differing = 0
    for name in sorted(left.keys() | right.keys()):
        x, y = left.get(name), right.get(name)
        if x == y:
            continue
        differing += 1
        if x is None or y is None:
            print(f"{name}: only in {'B' if x is None else 'A'}")
            continue
        field = next(k for k in sorted(x.keys() | y.keys()) if x.get(k) != y.get(k))
        print(f"{name}: {field}\n  A: {str(x.get(field))[:300]}\n  B: {str(y.get(field))[:300]}")
    print(f"{len(left)} files in A, {len(right)} in B, {differing} differ")
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--data", type=Path, default=DEFAULT_DATA)
    c = sub.add_parser("diff")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        print(f"{dump(args.data, args.out)} PDFs parsed into {args.out}")
    else:
        sys.exit(1 if diff(args.a, args.b) else 0)


if __name__ == "__main__":
    main()
