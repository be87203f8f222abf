"""Why a file failed to ingest, in words a person can act on; an unknown reason gets the general advice."""

from __future__ import annotations

import re

# (pattern on the stored reason, what to do), first match wins
_ADVICE: list[tuple[str, str]] = [
    (
        r"password is required",
        "The PDF is encrypted. Set THOTH_PDF_PASSWORD to its password, or replace it with "
        "an unencrypted copy, then run the ingest again.",
    ),
    (
        r"configured password does not open",
        "The PDF is encrypted with another password than THOTH_PDF_PASSWORD. "
        "Set the right password, or replace it with an unencrypted copy.",
    ),
    (
        r"OCR found no legible text",
        "The pages are images without legible text (photos, drawings): there is nothing to index. "
        "Remove the file from the source, or replace it with a copy that has text.",
    ),
    (
        r"no text layer",
        "The PDF holds only scanned images. Set THOTH_PDF_OCR=true to read them by OCR (it is on in the "
        "container image), or run OCR on it yourself (for example `ocrmypdf in.pdf out.pdf`) and put the "
        "OCR'd copy in its place.",
    ),
    (r"^empty file|PDF has no pages", "The file is empty. Upload it again; the copy in the source has no content."),
    (
        r"corrupt|unreadable",
        "The file is damaged. Open it in a viewer; if it does not open, export or download it again and replace it.",
    ),
    (
        r"unsupported file type",
        "Thoth does not read this kind of file. Convert it to PDF, Markdown or text, or remove it from the source.",
    ),
    (r"not UTF-8", "The text file is not UTF-8. Save it again as UTF-8."),
    (
        r"^no text|no content",
        "The file has no text to index (only front matter, or only binary files). Add "
        "content or remove it from the source.",
    ),
    (
        r"parser error",
        "The parser stopped on an unexpected error. Report it with this file; other files are not affected.",
    ),
]
_COMPILED = [(re.compile(pattern, re.IGNORECASE), advice) for pattern, advice in _ADVICE]
GENERAL = "Fix or replace the file in the source and run the ingest again; unchanged files are skipped."


def advice(reason: str | None) -> str:
    """What to do about a failed file, given the reason ingest stored."""
    for pattern, text in _COMPILED:
        if reason and pattern.search(reason):
            return text
    return GENERAL
