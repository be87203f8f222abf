"""The one rule for citation URLs: which schemes Thoth stores and shows (docs/security.md). A URL refused
is refused at ingest (`check`, an error naming the argument) and never emitted (`shown`, None instead)."""

from __future__ import annotations

import re

from thoth.config import Settings
from thoth.errors import ClientError

WEB_SCHEMES = ("http", "https", "gs")
THOTH_SCHEMES = ("doc", "raptor")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # browsers drop tabs and newlines inside a scheme: "java\tscript:"
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")
MAX_URL_CHARS = 2048


class CitationUrlError(ClientError):
    """A URL whose scheme a citation may not carry."""


def file_urls_allowed(settings: Settings) -> bool:
    """A local laptop index: the database is a folder and no caller has to authenticate."""
    return not settings.db_uri.startswith("gs://") and settings.auth_mode == "off"


def is_url(value: str) -> bool:
    """Whether `value` names a scheme at all (a bare path such as `notes/a.md` or `C:\\notes` does not)."""
    return bool(_SCHEME.match(value.strip())) and not _WINDOWS_PATH.match(value.strip())


def problem(url: str, allow_file: bool) -> str | None:
    """What is wrong with `url` as a citation URL, or None when it may be stored and shown."""
    if len(url) > MAX_URL_CHARS:
        return f"it is longer than {MAX_URL_CHARS} characters"
    if _CONTROL.search(url):
        return "it contains control characters"
    match = _SCHEME.match(url)
    if not match or _WINDOWS_PATH.match(url):
        return "it has no scheme"
    scheme = match.group(1).lower()
    allowed = WEB_SCHEMES + THOTH_SCHEMES + (("file",) if allow_file else ())
    if scheme not in allowed:
        where = " here (file: URLs are only kept on a local laptop index)" if scheme == "file" else ""
        return f"scheme {scheme!r} is not allowed{where}; allowed: {', '.join(allowed)}"
    rest = url[match.end() :]
    host = rest[2:].split("/", 1)[0] if rest.startswith("//") else ""
    if scheme == "file":
        if not rest.startswith("//") or host.lower() not in ("", "localhost"):
            return "a file: URL must be file:///path (a file on this machine, not a network share)"
    elif not rest.startswith("//") or not host:
        return f"a {scheme}: URL must be {scheme}://host/…"
    return None


def check(url: str, argument: str, settings: Settings) -> str:
    """`url`, or CitationUrlError naming `argument`, the scheme and what is allowed."""
    reason = problem(url, file_urls_allowed(settings))
    if reason:  # the value itself is not quoted: the message is stored and shown, and must not carry it
        raise CitationUrlError(f"{argument} is refused as a citation URL: {reason}")
    return url


def shown(url: str | None, settings: Settings) -> str | None:
    """`url` when a tool may emit it, else None (rows written before the rule, or by an older Thoth)."""
    return url if url and problem(url, file_urls_allowed(settings)) is None else None
