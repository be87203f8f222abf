"""The ingest job's parsers: the core's (Markdown, plain text: thoth.writes.parsers) plus PDF and workshops.

`parse(key, data)` picks the parser by file extension, or by `fmt` for a workshop unit. A file that
cannot be read raises `ParseError` with a reason meant for people.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from thoth.writes.parsers import PDF_SUFFIXES, Block, ParsedDocument, ParseError, Parsers, Partition


class JobParsers(Parsers):
    """The core's parsers, and PDFs and workshop repositories (their libraries load on first use)."""

    def parse(self, key: str, data: bytes, *, pdf_password: str | None = None, fmt: str = "") -> ParsedDocument:
        from ingest.parsers import pdf, workshop

        if fmt == workshop.FORMAT:
            return workshop.parse(key, data)
        if PurePosixPath(key).suffix.lower() in PDF_SUFFIXES:
            return pdf.parse(data, fallback_title=PurePosixPath(key).stem, password=pdf_password)
        return super().parse(key, data, pdf_password=pdf_password, fmt=fmt)

    def version(self, key: str, fmt: str = "") -> str:
        if not fmt and PurePosixPath(key).suffix.lower() in PDF_SUFFIXES:
            from ingest.parsers.pdf import PARSER_VERSION

            return PARSER_VERSION
        return super().version(key, fmt)


PARSERS = JobParsers()
parse = PARSERS.parse
parser_version = PARSERS.version

# The records and the error are the core's (thoth.writes.parsers), named here for the job's callers.
__all__ = ["Block", "JobParsers", "PARSERS", "ParseError", "ParsedDocument", "Partition", "parse", "parser_version"]
