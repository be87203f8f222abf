"""Citation references: `doc://{bucket-or-source}/{key}[?version_id=…][#page=N]`.

Ingest writes them on every chunk; `resolve_citation` reads them back. The key
is percent-encoded where a URI needs it (spaces, '#', '?'), so any object name
survives the round trip.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit

from thoth.errors import ClientError

SCHEME = "doc://"
_KEY_SAFE = "/-_.~!$&'()*+,;=:@"


def content_hash(data: bytes) -> str:
    """A document's identity: the SHA-256 of its bytes (the ingest job and ingest_document agree on it)."""
    return hashlib.sha256(data).hexdigest()


class SourceRefError(ClientError):
    """A source_ref that is not doc://{bucket}/{key}[?version_id=…][#page=N]."""


@dataclass(frozen=True)
class SourceRef:
    container: str  # the bucket (gs:// collections) or the source id (local folders)
    key: str
    version: str | None = None
    page: int | None = None

    @property
    def base(self) -> str:
        """The reference without the page: what every chunk of one stored object shares."""
        version = f"?version_id={quote(self.version, safe='')}" if self.version else ""
        return f"{SCHEME}{self.container}/{quote(self.key, safe=_KEY_SAFE)}{version}"

    def __str__(self) -> str:
        return self.base + (f"#page={self.page}" if self.page else "")


def parse_ref(ref: str) -> SourceRef:
    """Parse a source_ref, or raise SourceRefError saying what the expected form is."""
    expected = "expected doc://{bucket}/{key}[?version_id=…][#page=N]"
    if not isinstance(ref, str) or not ref.startswith(SCHEME):
        raise SourceRefError(f"source_ref {ref!r} is malformed: it must start with doc://; {expected}")
    parts = urlsplit(ref)
    container, key = parts.netloc, unquote(parts.path.lstrip("/"))
    if not container or not key:
        raise SourceRefError(f"source_ref {ref!r} is malformed: it names no bucket or no key; {expected}")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"version_id"})
    if unknown:
        raise SourceRefError(f"source_ref {ref!r} has unknown parameter(s) {', '.join(unknown)}; {expected}")
    version = query.get("version_id", [None])[0] or None
    page = None
    if parts.fragment:
        match = re.fullmatch(r"page=(\d{1,6})", parts.fragment)
        if not match or int(match.group(1)) < 1:
            raise SourceRefError(f"source_ref {ref!r} has a bad fragment {parts.fragment!r}; {expected}")
        page = int(match.group(1))
    return SourceRef(container, key, version, page)
