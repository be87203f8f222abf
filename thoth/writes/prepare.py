"""One source object -> the records the index holds of it: its `Document`, `Partition`s and chunks.

Identity is content-derived (doc ids are the bytes' SHA-256, chunk ids a UUIDv5 of collection,
document and normalised text), so writing the same bytes twice makes the same rows: that is what
lets a killed run start again and end with the tables one clean run leaves.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from thoth import bibtex, citation_urls
from thoth.config import Settings
from thoth.records import Chunk as StoredChunk  # a chunk as the index holds it (chunking's is one being cut)
from thoth.records import Document, Partition, to_row
from thoth.source_ref import SourceRef, content_hash
from thoth.writes import parsers
from thoth.writes.chunking import Chunk, Chunker
from thoth.writes.objects import SourceError, SourceObject, sidecar_keys
from thoth.writes.parsers import ParsedDocument, ParseError, Section, Stopped

log = logging.getLogger("thoth.ingest")

# Deterministic chunk ids: UUIDv5 of {collection}|{doc_hash}|{chunk_hash} in this namespace.
CHUNK_ID_NAMESPACE = uuid.UUID("5d1f3c9e-7a0b-5c7e-9f43-2b8d6e1a4c70")


# What a partition takes from its parsed section, and a stored chunk from the chunk being cut, as they are.
FROM_SECTION = ("kind", "page_start", "page_end", "text", "exercise_number", "step_number", "path", "is_diff",
                "ocr_confidence")  # fmt: skip
FROM_CHUNK = ("text", "page_start", "page_end", "content_type", "language")


def _copied(source: object, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(source, name) for name in names}


def _sha256(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def _normalise(text: str) -> str:
    return " ".join(text.split())


# Superscript digits right after a letter: a footnote mark or an exponent the PDF parser keeps raised
# (`competitions¹`). The BM25 tokenizer takes them for part of the word, so a search for `competitions`
# would miss it; what BM25 indexes gets a space before them, the quoted text keeps them.
_RAISED_MARK = re.compile(r"(?<=[^\W\d_])([\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+)")


def searchable(text: str) -> str:
    """`text` as BM25 indexes it: a raised mark after a word is a token of its own."""
    return _RAISED_MARK.sub(r" \1", text)


def chunk_identity(collection: str, doc_id: str, index: int, text: str) -> tuple[str, str]:
    """(chunk_id, chunk_hash): the hash of the normalised chunk, the id a UUIDv5 that includes the collection."""
    chunk_hash = _sha256("chunk", doc_id, index, _normalise(text))
    return str(uuid.uuid5(CHUNK_ID_NAMESPACE, f"{collection}|{doc_id}|{chunk_hash}")), chunk_hash


def object_id(obj: SourceObject) -> str:
    """The research surface's per-object id (docs/gcs.md): SHA-1 of gs://{bucket}/{key}?version_id={generation}."""
    return hashlib.sha1(f"{obj.uri}?version_id={obj.version or ''}".encode()).hexdigest()


def source_ref(source_id: str, obj: SourceObject, page: int | None = None) -> SourceRef:
    return SourceRef(obj.bucket or source_id, obj.key, obj.version, page)


def sidecar_of(key: str, sidecars: dict[str, SourceObject]) -> SourceObject | None:
    return next((sidecars[k] for k in sidecar_keys(key) if k in sidecars), None)


def sidecar_fingerprint(key: str, sidecars: dict[str, SourceObject]) -> str:
    sidecar = sidecar_of(key, sidecars)
    if sidecar is None:
        return ""
    return sidecar.fingerprint or content_hash(sidecar.read())


@dataclass
class Prepared:
    """One object read, parsed and cut, waiting for its batch to be embedded and written."""

    obj: SourceObject
    document: Document
    partitions: list[Partition]
    chunks: list[Chunk]
    tags: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)  # picture name -> figures.FigureImage (PDF figures)
    first_chunk: int = 0  # the index in its document of its first chunk (a long PDF's window: the chunks before)
    # A long PDF: the windows after this one, each Prepared alike, read as this is iterated; `document`
    # is final (the invisible characters of every window counted) once it is.
    rest: Iterator[Prepared] | None = None

    @property
    def doc_id(self) -> str:
        return self.document.doc_id


def prepare(
    settings: Settings,
    source_id: str,
    obj: SourceObject,
    fingerprint: str | None,
    sidecars: dict[str, SourceObject],
    chunker: Chunker,
    stored: set[str],
    stop: threading.Event | None = None,
) -> Prepared | None:
    """Read, parse and cut one object; None when it cannot be read (not the file's fault: the next run
    retries it). A file that cannot be parsed gets a `failed` document and no chunks. `stop` set ends the
    reading of a long PDF (Stopped)."""
    try:
        data = obj.read()
    except SourceError as exc:  # gone, no access: no row, so the next run sees it as to do
        log.warning("cannot read %s: %s", obj.key, exc)
        return None
    doc_id = content_hash(data)
    document = Document(
        doc_id=doc_id,
        source_id=source_id,
        key=obj.key,
        uri=obj.uri,
        bucket=obj.bucket,
        version=obj.version,
        byte_size=len(data),
        ingested_at=datetime.now(UTC),
        object_id=object_id(obj),
        fingerprint=fingerprint or obj.fingerprint or doc_id,
        sidecar=sidecar_fingerprint(obj.key, sidecars),
        parser=parsers.parser_version(obj.key, obj.format),
    )

    def failed(reason: str) -> Prepared:
        return Prepared(obj, dataclasses.replace(document, status="failed", error=reason), [], [])

    try:
        web = obj.uri if obj.uri.startswith(("http://", "https://")) else None  # relative links resolve on it
        parsed: ParsedDocument = parsers.parse(
            obj.key,
            data,
            pdf_password=settings.pdf_password or None,
            fmt=obj.format,
            pdf_ocr=settings.pdf_ocr,
            pdf_figures=settings.pdf_figures,
            base_url=web,
            stop=stop,
        )
    except Stopped:
        raise
    except ParseError as exc:
        log.warning("skipped %s: %s", obj.key, exc)
        return failed(str(exc))
    except Exception as exc:  # a parser bug must not stop the run; record it and go on
        log.exception("parser failed on %s", obj.key)
        return failed(f"parser error: {type(exc).__name__}: {exc}")
    if parsed.url:  # a URL the file claims for itself (front matter): citations show it, so the rule applies
        try:
            citation_urls.check(parsed.url, "the front matter url", settings)
        except citation_urls.CitationUrlError as exc:
            log.warning("skipped %s: %s", obj.key, exc)
            return failed(str(exc))
    cited = citation_of(parsed, fallback_title=parsed.title)
    entry, origin = _bibtex(source_id, obj, sidecars, cited, doc_id)
    document = dataclasses.replace(
        document,
        title=cited.title,
        authors=tuple(cited.authors),
        year=cited.year,
        page_count=parsed.page_count,
        unmapped_glyphs=parsed.unmapped_glyphs,
        hidden_dropped=tuple(sorted(parsed.hidden_dropped.items())),
        url=parsed.url,
        bibtex=entry,
        bibtex_source=origin,
    )
    if doc_id in stored:  # identical bytes already stored: only the key (or generation) is new
        return Prepared(obj, document, [], [])
    head = Prepared(obj, document, _partitions(source_id, doc_id, parsed.sections, 0), [], figures=parsed.figures)
    head.chunks = chunker.chunk(cited.title, parsed.sections)
    if parsed.rest is not None:
        head.rest = _windows(source_id, head, parsed, chunker, cited.title)
    return head


def _partitions(source_id: str, doc_id: str, sections: list[Section], first: int) -> list[Partition]:
    """`sections` as partitions, the first the document's `first`."""
    return [
        Partition(
            partition_id=_sha256(source_id, doc_id, i, _normalise(s.text))[:32],
            partition_hash=_sha256("partition", doc_id, i, _normalise(s.text)),
            doc_id=doc_id,
            source_id=source_id,
            ordinal=i,
            heading_path=" > ".join(s.heading_path),
            **_copied(s, FROM_SECTION),
        )
        for i, s in enumerate(sections, start=first)
    ]


def _windows(
    source_id: str, head: Prepared, parsed: ParsedDocument, chunker: Chunker, title: str
) -> Iterator[Prepared]:
    """A long PDF's windows after the first (`head`), each with its partitions and chunks numbered on from
    the window before; `head.document` counts every window's invisible characters once the last is read.
    A window the parser fails on ends them with `head.document` failed, as `prepare` fails a shorter file."""
    partitions, chunks = len(head.partitions), len(head.chunks)
    try:
        for sections, figures in parsed.rest or ():
            window = Prepared(head.obj, head.document, _partitions(source_id, head.doc_id, sections, partitions), [])
            window.chunks, window.figures, window.first_chunk = chunker.chunk(title, sections), figures, chunks
            partitions, chunks = partitions + len(window.partitions), chunks + len(window.chunks)
            yield window
    except Stopped:
        raise
    except Exception as exc:  # a parser bug must not stop the run; the document is recorded failed
        log.exception("parser failed on %s", head.obj.key)
        error = str(exc) if isinstance(exc, ParseError) else f"parser error: {type(exc).__name__}: {exc}"
        head.document = dataclasses.replace(head.document, status="failed", error=error)
        return
    head.document = dataclasses.replace(head.document, hidden_dropped=tuple(sorted(parsed.hidden_dropped.items())))


def citation_of(parsed: ParsedDocument, fallback_title: str) -> bibtex.Citation:
    """The citation fields: the first page's layout (PDFs), then the file's metadata, then line guesses. The
    layout sees font sizes, so its title and authors beat metadata, often empty, a file name or a placeholder."""
    front = parsed.front_matter
    guess = bibtex.guess_from_first_page(parsed.first_page) if parsed.first_page else {}
    if front.get("title"):
        title = front["title"]
    elif parsed.title_from_metadata or not guess.get("title"):
        title = parsed.title
    else:
        title = guess["title"]
    return bibtex.Citation(
        title=title or fallback_title,
        authors=front.get("authors") or parsed.authors or guess.get("authors", []),
        # the arXiv id's year beats PDF CreationDate, which is when the file was rendered
        year=front.get("year") or guess.get("year") or parsed.year,
        eprint=front.get("eprint") or guess.get("eprint"),
        primary_class=front.get("primary_class") or guess.get("primary_class"),
        doi=front.get("doi"),
    )


def _bibtex(
    source_id: str, obj: SourceObject, sidecars: dict[str, SourceObject], cited: bibtex.Citation, doc_id: str
) -> tuple[str, str]:
    """(the document's BibTeX entry, where it came from: its sidecar, or generated from its fields)."""
    sidecar = sidecar_of(obj.key, sidecars)
    if sidecar is not None:
        try:
            text = bibtex.read_sidecar(sidecar.read())
        except SourceError as exc:
            text = None
            log.warning("cannot read %s: %s", sidecar.key, exc)
        if text:
            return text, "sidecar"
        log.warning("%s holds no BibTeX entry; generating one for %s", sidecar.key, obj.key)
    return bibtex.make_entry(cited, doc_id, note=source_ref(source_id, obj).base), "generated"


def _figure(prepared: Prepared, chunk: Chunk) -> dict[str, Any]:
    picture = prepared.figures.get(chunk.figure) if chunk.figure else None
    if picture is None:
        return {}
    return {"figure": picture.name, "figure_box": tuple(round(v, 2) for v in picture.box)}


def pictures(prepared: Prepared) -> dict[str, bytes]:
    """The pictures the prepared object's chunks name, by name."""
    named = {c.figure for c in prepared.chunks if c.figure}
    return {name: picture.png for name, picture in prepared.figures.items() if name in named}


def chunk_rows(source_id: str, chunks: list[tuple[Prepared, int, Chunk]], vectors: Sequence) -> list[dict]:
    """Chunks (each with its document and its index in it) as table rows, each with its vector and the
    text keyword search reads."""
    rows = []
    for (prepared, index, chunk), vector in zip(chunks, vectors, strict=True):
        partition = prepared.partitions[chunk.partition_index]
        chunk_id, chunk_hash = chunk_identity(source_id, prepared.doc_id, index, chunk.text)
        record = StoredChunk(
            chunk_id=chunk_id,
            chunk_hash=chunk_hash,
            doc_id=prepared.doc_id,
            source_id=source_id,
            partition_id=partition.partition_id,
            partition_hash=partition.partition_hash,
            chunk_index=index,
            key=prepared.document.key,
            title=prepared.document.title,
            section=chunk.context,
            **_copied(chunk, FROM_CHUNK),
            exercise_number=partition.exercise_number,
            step_number=partition.step_number,
            tags=tuple(prepared.tags),
            source_ref=str(source_ref(source_id, prepared.obj, chunk.page_start)),
            **_figure(prepared, chunk),
            boxes=chunk.boxes or None,
        )
        rows.append({**to_row(record), "search_text": f"{chunk.context}\n{searchable(chunk.text)}", "vector": vector})
    return rows
