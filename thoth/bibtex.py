"""A BibTeX entry per document, from the file's metadata and its first page.

PDF metadata often lacks a title and authors (arXiv PDFs carry neither) and its
CreationDate is the date the file was rendered, so the first page is read too:
the arXiv stamp gives the identifier and year, the first title-cased lines the
title, the name lines under it the authors. Guesses are guesses: an optional
`{key}.bib` sidecar next to the file replaces the generated entry verbatim.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_ARXIV = re.compile(r"arXiv:(\d{4}\.\d{4,5})(v\d+)?\s*(?:\[([\w.-]+)\])?\s*(?:\d{1,2}\s+\w{3,9}\s+((?:19|20)\d\d))?")
_YEAR = re.compile(r"\b((?:19|20)\d\d)\b")
_SMALL = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "via", "with"}
_NOT_NAMES = re.compile(
    r"\b(university|universit|institute|college|school|department|dept|laborator|lab|research|inc|corp|"
    r"company|center|centre|google|brain|microsoft|facebook|meta|deepmind|openai|abstract|introduction)\b",
    re.IGNORECASE,
)
_MARKERS = re.compile(r"[*∗†‡§¶]|\d+")
_ESCAPES = {"\\": r"\textbackslash{}", **{ch: "\\" + ch for ch in "{}&%#$_"}}


@dataclass(frozen=True)
class Citation:
    """What a document is cited as: its `documents` row's title, authors and year, and its BibTeX entry."""

    title: str
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    eprint: str | None = None  # the arXiv id
    primary_class: str | None = None  # the arXiv category
    doi: str | None = None


def escape(value: str) -> str:
    """A field value safe inside braces: TeX specials escaped, whitespace collapsed."""
    return "".join(_ESCAPES.get(ch, ch) for ch in " ".join(value.split()))


def _words(line: str) -> list[str]:
    return re.findall(r"[^\W\d_][\w'’-]*", line)


def _title_case_share(line: str) -> float:
    words = [w for w in _words(line) if w.lower() not in _SMALL]
    return sum(w[0].isupper() for w in words) / len(words) if words else 0.0


def _looks_like_title(line: str) -> bool:
    words = _words(line)
    return (
        2 <= len(words) <= 25
        and not line.rstrip().endswith((".", ","))
        and "@" not in line
        and not _ARXIV.search(line)
        and _title_case_share(line) >= 0.75
    )


def _names_in(line: str) -> list[str]:
    """The person names on one line under the title ('' list when the line is something else)."""
    if "@" in line or _NOT_NAMES.search(line) or line.rstrip().endswith("."):
        return []
    parts = [p.strip() for p in re.split(r",|\band\b|&|" + _MARKERS.pattern, line) if p.strip()]
    names: list[str] = []
    for part in parts:
        tokens = part.split()
        if not tokens or not all(t[0].isupper() for t in tokens) or len(tokens) > 8:
            return []
        if len(tokens) >= 4 and len(tokens) % 2 == 0 and not any(t.endswith(".") for t in tokens):
            names += [" ".join(tokens[i : i + 2]) for i in range(0, len(tokens), 2)]  # "Ann Lee Bo Chan"
        elif len(tokens) >= 2:
            names.append(" ".join(tokens))
        else:
            return []
    return names


def guess_from_first_page(text: str) -> dict:
    """Title, authors, year and arXiv identifier from the first page's lines (each may be missing)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()][:80]
    found: dict = {}
    stamp = _ARXIV.search(text[:2000])
    if stamp:
        found["eprint"], found["primary_class"] = stamp.group(1), stamp.group(3)
        found["year"] = 2000 + int(stamp.group(1)[:2])  # the first version's year (yymm), not this version's
    start = next((i for i, line in enumerate(lines) if _looks_like_title(line)), None)
    if start is None:
        return found
    title, end = lines[start], start + 1
    while end < len(lines) and _looks_like_title(lines[end]):
        # a title broken over lines: it ends on a small word or a colon, or the next line is not names
        broken = title.split()[-1].lower() in _SMALL or title.endswith(":")
        if not broken and _names_in(lines[end]):
            break
        title, end = f"{title} {lines[end]}", end + 1
    found["title"] = title
    authors: list[str] = []
    for line in lines[end : end + 40]:
        if line.lower().startswith("abstract"):
            break
        authors += _names_in(line)
    if authors:
        found["authors"] = list(dict.fromkeys(authors))
    if "year" not in found:
        year = _YEAR.search(" ".join(lines[:20]))
        if year:
            found["year"] = int(year.group(1))
    return found


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


def _last_name(author: str) -> str:
    return author.split(",")[0] if "," in author else author.split()[-1]


def citation_key(title: str, authors: list[str], year: int | None, fallback: str) -> str:
    """`vaswani2017attention`-style: first author's last name, year, first significant title word."""
    name = re.sub(r"[^a-z]", "", _ascii(_last_name(authors[0]))) if authors else ""
    word = next((w for w in (re.sub(r"[^a-z0-9]", "", _ascii(w)) for w in title.split()) if w and w not in _SMALL), "")
    key = f"{name}{year or ''}{word}"
    return key if name or word else fallback


def _bibtex_author(author: str) -> str:
    if "," in author:
        return author
    parts = author.split()
    return f"{parts[-1]}, {' '.join(parts[:-1])}" if len(parts) > 1 else author


def make_entry(cited: Citation, doc_id: str, note: str | None = None) -> str:
    """One @misc entry (arXiv papers get eprint/archivePrefix/primaryClass; a DOI goes in doi)."""
    key = citation_key(cited.title, cited.authors, cited.year, f"doc{doc_id[:12]}")
    lines = [f"@misc{{{key},", f"  title = {{{escape(cited.title)}}},"]
    if cited.authors:
        lines.append(f"  author = {{{' and '.join(escape(_bibtex_author(a)) for a in cited.authors)}}},")
    if cited.year:
        lines.append(f"  year = {{{cited.year}}},")
    if cited.eprint:
        lines += [f"  eprint = {{{cited.eprint}}},", "  archivePrefix = {arXiv},"]
        if cited.primary_class:
            lines.append(f"  primaryClass = {{{escape(cited.primary_class)}}},")
    if cited.doi:
        lines.append(f"  doi = {{{escape(cited.doi)}}},")
    if note:
        lines.append(f"  note = {{{escape(note)}}},")
    return "\n".join(lines) + "\n}\n"


def read_sidecar(data: bytes) -> str | None:
    """The sidecar's text when it holds a BibTeX entry (an '@type{' and balanced braces), else None."""
    try:
        text = data.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        return None
    if not re.search(r"@\w+\s*[{(]", text) or text.count("{") != text.count("}"):
        return None
    return text + "\n"


# A reference-list entry ("[3] D. P. Kingma and J. Ba. Adam: A method ... arXiv:1412.6980, 2014."):
# its parts end at a period after a word ("Ba."), or after an initial where the title starts
# ("Liang, P. Generating sentences ..."; not "D. P. Kingma and", not "Liang, P., and").
_ENTRY_MARK = re.compile(r"^\s*(?:\[[^\]]{1,60}\]|\d{1,3}\.)\s*")  # "[3]", "3.", "[Cho et al.2014]"
_PART_END = re.compile(r"(?<=[^\s.-]{2})\.\s+|(?<=\b[A-Z]\.)\s+(?=[A-Z][^\s,.]*\s+(?!and\b)[a-z])")
_REF_YEAR = re.compile(r"\(((?:19|20)\d\d)[a-z]?\)|\b((?:19|20)\d\d)[a-z]?\b")
_REF_ARXIV = re.compile(r"(?:arXiv:?\s*|abs/)(\d{4}\.\d{4,5})", re.I)
_REF_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s,;]+)")
_INITIALS = re.compile(r"^(?:[A-Z]\.?\s?-?)+$")
_NOT_A_TITLE = re.compile(r"^(?:In\b|arXiv|Proceedings|Advances in|CoRR|URL|https?:)", re.I)


def _reference_authors(part: str) -> list[str]:
    """'Bengio, Y., Ducharme, R., and Janvin, C.' or 'Jimmy Lei Ba, Jamie Ryan Kiros, and Geoffrey E Hinton'."""
    part = re.sub(r"\s*\((?:19|20)\d\d[a-z]?\)\s*$", "", part).replace("et al.", "").strip(" ,")
    pieces = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", part) if p.strip()]
    authors: list[str] = []
    for piece in pieces:
        if _INITIALS.match(piece) and authors and "," not in authors[-1]:
            authors[-1] = f"{authors[-1]}, {piece}"  # 'Bengio' + 'Y.': the surname-first style
        else:
            authors.append(piece)
    return authors if all(1 <= len(a.split()) <= 5 for a in authors) else []


def parse_reference(entry: str) -> Citation | None:
    """The cited work of one reference-list entry, when it gives authors, title and year (its arXiv id
    or DOI too, when it has one); None when the entry does not give that much."""
    text = _ENTRY_MARK.sub("", " ".join(entry.split()))
    parts = [p.strip() for p in _PART_END.split(text) if p and p.strip()]
    arxiv, doi = _REF_ARXIV.search(text), _REF_DOI.search(text)
    found = _REF_YEAR.findall(_REF_DOI.sub(" ", _REF_ARXIV.sub(" ", text)))  # "arXiv:2004.04906" is no year
    # "(2003)" after the names (author-year style), else the last year: the one after the venue
    years = [int(a) for a, _ in found if a] or [int(b) for _, b in found[::-1] if b]
    if len(parts) > 2 and re.fullmatch(r"(?:19|20)\d\d[a-z]?", parts[1]):
        del parts[1]  # ACL style: "Names. 2014. Title."
    if len(parts) < 2 or not years:
        return None
    authors, title = _reference_authors(parts[0]), parts[1].rstrip(".,")
    if not authors or len(title.split()) < 2 or _NOT_A_TITLE.match(title):
        return None
    return Citation(
        title=title,
        authors=authors,
        year=years[0],
        eprint=arxiv.group(1) if arxiv else None,
        doi=doi.group(1).rstrip(".") if doi else None,
    )
