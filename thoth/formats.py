"""The file formats Thoth reads, as data: each one's suffixes, parser version and the kind a collection of its
files is. The write path's parsers (`thoth.writes.parsers`, a module per format's name) and retrieval (a
Markdown page's public path) both read this table."""

from __future__ import annotations

from dataclasses import dataclass

# suffix -> the language name fenced Markdown blocks use (what qurio_search's `language` filter matches)
CODE_LANGUAGES = {
    ".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "jsx",
    ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin",
    ".scala": "scala", ".rb": "ruby", ".php": "php", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".hpp": "cpp", ".cs": "csharp", ".swift": "swift", ".sh": "bash", ".bash": "bash", ".sql": "sql",
    ".r": "r", ".lua": "lua", ".tf": "hcl",
}  # fmt: skip


@dataclass(frozen=True)
class Format:
    """A file format Thoth reads: its parser is the module `thoth.writes.parsers.<name>`, whose `read(RawFile)`
    returns the `ParsedDocument`; it loads on first use (a server that only ever reads text never loads PDFium)."""

    name: str  # the module, and the `SourceObject.format` that picks it when the key's suffix does not
    suffixes: tuple[str, ...]
    kind: str = "text"  # what a collection of these files is (`content_kind`)
    # stored with each document (`parser_version`): a new version re-parses that format's files once
    version: str = ""


MARKDOWN = Format("markdown", (".md", ".mdx", ".markdown"), kind="handbook")
FORMATS = (
    MARKDOWN,
    # pdf-9: hidden text left out (hidden.py); pdf-10/11: tables; pdf-12: figures
    Format("pdf", (".pdf",), kind="pdf", version="pdf-12"),
    Format("text", (".txt",)),
    Format("html", (".html", ".htm")),  # also a crawled page, whatever its URL ends in
    Format("docx", (".docx",)),
    Format("notebook", (".ipynb",)),
    Format("code", tuple(CODE_LANGUAGES)),
    Format("workshop", ()),  # a workshop unit: a bundle of files, picked by its `SourceObject.format`
)
