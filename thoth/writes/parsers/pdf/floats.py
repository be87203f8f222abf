"""Figure and table captions and footnotes of a PDF page, kept out of the running text.

PDFium reads a page in drawing order, so a caption or a footnote sits between the two halves of a
sentence that runs around it (`the log prob- Figure 1: ... ability`). Their lines are marked here
and become blocks of their own (content types `caption`, `algorithm` and `footnote`) in the partition of the page
and section where they sit; the body text then reads on across them.

- a caption starts with "Figure 3:", "Fig. 3.", "Table 2:" or "Algorithm 1" and runs on while its
  lines stay as tightly set as a paragraph's (a float is set apart by space);
- a footnote is a run of lines set smaller than the body, low on the page, that starts with its
  number or mark;
- the text inside a figure's drawing (drawings.py: labels, ticks) goes with the figure's caption.
"""

from __future__ import annotations

import re

from thoth.writes.parsers.pdf.layout import Line

_CAPTION = re.compile(r"^(?:Figure|Fig\.|Table|Algorithm)\s*\d{1,2}[:.]?\s", re.I)
_ALGORITHM = re.compile(r"^Algorithm\s*\d{1,2}[:.]?\s", re.I)
_FOOTNOTE_START = re.compile(r"^(?:\d{1,2}|[∗*†‡§¶⋆])\s*[^\W\d_]")
_LOW = 0.4  # of the page's height: where footnotes sit


def caption_lines(lines: list[Line], start: int) -> list[Line]:
    first = lines[start]
    out = [first]
    for line in lines[start + 1 :]:
        prev = out[-1]
        gap = prev.y0 - line.y1
        tight = -0.2 * first.size < gap < 0.5 * first.size
        if not tight or abs(line.size - first.size) > 0.4 or line.x0 < first.x0 - 5 or line.x0 > first.x1:
            break
        out.append(line)
    return out


def _footnote_lines(lines: list[Line], start: int, body: float) -> list[Line]:
    out = []
    for line in lines[start:]:
        if line.size > body - 0.8 or line.furniture:
            break
        out.append(line)
    return out


def mark_floats(pages: list[list[Line]], body: float, heights: list[float]) -> None:
    """Set `role` ('caption' or 'footnote') on the lines of captions and footnotes."""
    for lines, height in zip(pages, heights, strict=True):
        lines = [
            x
            for x in lines
            if not (x.furniture or x.heading_level or x.role == "table") and (x.in_figure or not x.rotated)
        ]
        # a figure's labels join its caption; a page without captions (a form, text over an image) keeps them
        captioned = any(_CAPTION.match(x.plain.strip()) for x in lines)
        i = 0
        while i < len(lines):
            line = lines[i]
            text = line.plain.strip()
            found: list[Line] = []
            role = ""
            if _CAPTION.match(text) and not line.in_figure:
                found, role = caption_lines(lines, i), "caption"
            elif (
                line.size <= body - 0.8
                and line.y1 < _LOW * height
                and _FOOTNOTE_START.match(line.text.strip())
                and not line.in_figure
            ):
                found, role = _footnote_lines(lines, i, body), "footnote"
            if line.in_figure and captioned:  # a figure's labels and ticks: they go with its caption
                found, role = [line], "caption"
            for x in found:
                x.role = role
            i += max(1, len(found))


def split_floats(lines: list[Line]) -> tuple[list[Line], list[tuple[str, list[Line]]]]:
    """The running text's lines, and each caption, algorithm box and footnote as (role, its lines), in
    page order. An algorithm box is a caption group with an "Algorithm N" line: its steps (inside the
    box's drawing, or set tightly under its title) go with it."""
    text: list[Line] = []
    floats: list[tuple[str, list[Line]]] = []
    for line in lines:
        if not line.role:
            text.append(line)
            continue
        starts = _CAPTION.match(line.plain.strip()) if line.role == "caption" else _FOOTNOTE_START.match(line.text)
        labels = bool(floats) and floats[-1][0] == "caption" and all(x.in_figure for x in floats[-1][1])
        if not floats or floats[-1][0] != line.role or starts and not labels:
            floats.append((line.role, []))
        floats[-1][1].append(line)
    algorithm = [any(_ALGORITHM.match(x.plain.strip()) for x in group) for role, group in floats]
    return text, [("algorithm" if box else role, group) for (role, group), box in zip(floats, algorithm, strict=True)]
