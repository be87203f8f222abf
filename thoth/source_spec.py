"""What a source is: where it is read from, what kind of place that is, and which of its files it takes.

One `SourceSpec` is made from what a run is given and kept with the collection, so every later run reads the
same record back (`SourceSpec.of`) and lists the same files; the lister of each kind asks `wants(key)` of it,
and nothing else decides scope. Scope globs: docs/sources.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from thoth.errors import ClientError
from thoth.gcs import split_gs_uri

if TYPE_CHECKING:
    from thoth.records import Source

_GIT_URL = re.compile(r"^(ssh|git|file)://|^git@[^:]+:|^https?://\S+\.git/?(#.*)?$")
MAX_PATTERNS = 50  # globs per list: a scope, not a listing of files
MAX_PATTERN_CHARS = 300
SIDECAR_SUFFIX = ".bib"  # as thoth.writes.objects: a BibTeX file next to its document


class ScopeError(ClientError):
    """A scope argument that cannot be used; the message names it and what is allowed."""


def is_git_url(source: str) -> bool:
    return bool(_GIT_URL.match(source))


def origin_kind(uri: str) -> str:
    """folder, bucket, web or git: what a source's URI says it is (the one place that decides it; everything
    else reads `SourceSpec.kind`)."""
    if is_git_url(uri):
        return "git"
    if uri.startswith(("http://", "https://")):
        return "web"
    return "bucket" if uri.startswith("gs://") else "folder"


# What a web or git source's last run saw (validators, the commit), JSON in the store's settings: saved once
# the run is written (thoth/writes/listing.py), read by the next run and by thoth.retrieval.origins.
WEB_STATE_KEY = "crawl:{source_id}"
GIT_STATE_KEY = "git:{source_id}"


def shown_location(uri: str) -> str:
    """The URI without a user or password it may carry (https://user:token@host/…)."""
    parts = urlsplit(uri)
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl() if "@" in parts.netloc else uri


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression a scope glob stands for (docs/sources.md)."""
    body = pattern.lstrip("/")
    if "/" not in body.rstrip("/"):
        body = "**/" + body
    out, i = [], 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        elif body[i] == "[" and (end := body.find("]", i + 2)) > 0:
            inner = body[i + 1 : end]
            out.append("[" + ("^" + re.escape(inner[1:]) if inner[:1] == "!" else re.escape(inner)) + "]")
            i = end + 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    if body.endswith("/"):  # `docs/` is the folder: everything under it
        out.append(".*")
    return re.compile("".join(out) + r"\Z")


def _patterns(name: str, values: object) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    found = []
    for value in values:  # type: ignore[union-attr]
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise ScopeError(f"{name}: each pattern must be a non-empty glob, got {value!r}", argument=name)
        if len(value) > MAX_PATTERN_CHARS:
            raise ScopeError(f"{name}: a pattern is at most {MAX_PATTERN_CHARS} characters", argument=name)
        found.append(value.strip())
    if len(found) > MAX_PATTERNS:
        raise ScopeError(f"{name}: at most {MAX_PATTERNS} patterns, got {len(found)}", argument=name)
    return tuple(dict.fromkeys(found))


def _repo_path(value: str | None) -> str:
    """A folder inside a repository, '/'-separated without leading or trailing slashes."""
    path = (value or "").strip().strip("/")
    parts = path.split("/") if path else []
    if any(p in ("", ".", "..") for p in parts) or "\0" in path:
        raise ScopeError(f"path must be a folder inside the repository such as docs/en, got {value!r}", argument="path")
    return path


def slug(name: str) -> str:
    """A collection's id from its name."""
    value = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not value:
        raise ValueError(f"source name {name!r} has no letters or digits")
    return value


def split_fragment(uri: str) -> tuple[str, str, str]:
    """`url#ref:path` -> (url, ref, path); ref '' is the remote's HEAD, path '' the whole repository."""
    url, _, fragment = uri.partition("#")
    ref, _, path = fragment.partition(":")
    return url, ref, path


@dataclass(frozen=True)
class SourceSpec:
    """A source as every run reads it: its location and kind, a git ref and path, include and exclude globs."""

    location: str  # an absolute folder, gs://bucket/prefix, an http(s) URL, or a git URL (without `#`)
    kind: str  # folder | bucket | web | git
    ref: str = ""  # git: branch, tag or commit ('' = the remote's HEAD)
    path: str = ""  # git: the folder inside the repository ('' = all of it)
    include: tuple[str, ...] = ()  # keys must match one of these (none: every key)
    exclude: tuple[str, ...] = ()  # keys matching one of these are left out

    @classmethod
    def parse(
        cls,
        source: str,
        *,
        ref: str | None = None,
        path: str | None = None,
        include: object = None,
        exclude: object = None,
        remote: bool = False,
    ) -> SourceSpec:
        """The spec of `source` as a run is given it. A git URL may carry `#ref:path`; `ref` and `path`
        override those, and make a local folder a git source (a clone read at that ref). `remote` (a writer
        over MCP, whose argument is `uri`) refuses a folder or file:// clone before looking it up on disk."""
        source = (source or "").strip()
        location = source.split("#", 1)[0]
        if remote and (origin_kind(location) == "folder" or location.startswith("file:")):
            raise ScopeError(
                "uri must be an http(s) website, a git URL (https, ssh or git) or gs://bucket/prefix; folders on "
                "the server's disk are ingested with `thoth ingest`",
                argument="uri",
            )
        if not source or "\0" in source:
            message = "source must be a folder, gs://bucket/prefix, an http(s) URL or a git URL"
            raise ScopeError(message, argument="source")
        include, exclude = _patterns("include", include), _patterns("exclude", exclude)
        git = is_git_url(source) or ref is not None or path is not None
        if not git:
            if "#" in source and source.startswith(("http://", "https://")):
                source = source.split("#", 1)[0]  # a page anchor names no other page
            kind = origin_kind(source)
            if kind == "folder" and "://" not in source:
                source = str(Path(source).expanduser().resolve())
            return cls(source, kind, include=include, exclude=exclude)
        url, in_ref, in_path = split_fragment(source)
        if not is_git_url(url):  # a local clone: read through its file:// URL
            local = Path(url).expanduser()
            if not local.exists():
                raise ScopeError(f"git source {url!r} is neither a git URL nor a local clone", argument="source")
            url = local.resolve().as_uri()
        ref_value = (ref if ref is not None else in_ref).strip()
        if ref_value.startswith("-") or any(c in ref_value for c in " \0:~^"):
            raise ScopeError(f"ref must be a branch, tag or commit, got {ref_value!r}", argument="ref")
        return cls(url, "git", ref_value, _repo_path(path if path is not None else in_path), include, exclude)

    @classmethod
    def of(cls, source: Source) -> SourceSpec:
        """The spec a collection was last ingested with (its `sources` row)."""
        kind = origin_kind(source.uri)
        if kind != "git":
            return cls(source.uri, kind, include=tuple(source.include), exclude=tuple(source.exclude))
        url, ref, path = split_fragment(source.uri)
        return cls(url, "git", ref, path, tuple(source.include), tuple(source.exclude))

    @property
    def uri(self) -> str:
        """What `sources.uri` holds: the location, and for git `#ref` or `#ref:path`."""
        if self.kind != "git":
            return self.location
        fragment = f"{self.ref}:{self.path}" if self.path else self.ref
        return f"{self.location}#{fragment}" if fragment else self.location

    @property
    def collection_name(self) -> str:
        """The name of the collection a source goes into when it is given none: the bucket (one collection per
        bucket), the repository, the site's host and path, or the folder's name."""
        if self.kind == "bucket":
            return split_gs_uri(self.location)[0]
        if self.kind == "git":  # `https://gitlab.com/acme/handbook.git` -> `handbook`
            name = re.split(r"[/:]", self.location.rstrip("/"))[-1]
            return name.removesuffix(".git")
        if self.kind == "web":  # `https://docs.example.com/guide/` -> `docs.example.com/guide`
            parts = urlsplit(self.location)
            return f"{parts.netloc}{parts.path}".rstrip("/")
        return self.location.rstrip("/").rsplit("/", 1)[-1]

    @property
    def scoped(self) -> bool:
        """Whether a scope was given (a run given none applies the collection's recorded one)."""
        return bool(self.path or self.include or self.exclude)

    def with_scope_of(self, recorded: SourceSpec) -> SourceSpec:
        """This spec with `recorded`'s scope, when this one has none and both read the same place (a local
        clone ingested as a git source, given again as its folder, is that git source again)."""
        if self.scoped:
            return self
        if self.kind == "folder" and recorded.kind == "git" and Path(self.location).as_uri() == recorded.location:
            return recorded
        if recorded.location != self.location:
            return self
        return replace(self, path=recorded.path, include=recorded.include, exclude=recorded.exclude)

    def wants(self, key: str) -> bool:
        """Whether a file (its key) is in scope. A BibTeX sidecar is kept unless excluded or outside the
        path: include globs name documents, and a sidecar serves only a document that is listed."""
        key = key.lstrip("/")
        if self.path and not key.startswith(self.path + "/"):
            return False
        if any(glob_regex(p).match(key) for p in self.exclude):
            return False
        if not self.include or key.lower().endswith(SIDECAR_SUFFIX):
            return True
        return any(glob_regex(p).match(key) for p in self.include)

    def describe(self) -> str:
        """The scope in one line ('' when there is none), for logs and run summaries."""
        parts = [f"path {self.path}"] if self.path else []
        parts += [f"include {', '.join(self.include)}"] if self.include else []
        parts += [f"exclude {', '.join(self.exclude)}"] if self.exclude else []
        return "; ".join(parts)
