"""Where each source comes from (a folder, a bucket, a website, a git repository), when it was last read,
at which commit, and what changed in a git source lately (`get_recent_updates`): read from what a web or
git source's last run saved (thoth.source_spec.WEB_STATE_KEY, GIT_STATE_KEY).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from thoth.config import Settings
from thoth.errors import NotFound
from thoth.records import Document, Source
from thoth.retrieval.collections import shown_source
from thoth.retrieval.pages import page_url
from thoth.retrieval.topics import topic_of
from thoth.source_ref import SourceRef
from thoth.source_spec import GIT_STATE_KEY, WEB_STATE_KEY, SourceSpec, shown_location
from thoth.store import Store


@dataclass(frozen=True)
class Origin:
    kind: str  # folder | bucket | web | git
    location: str
    read_at: datetime | None  # the last crawl (web) or read of the repository (git); else the last write
    commit: str | None = None
    ref: str | None = None


def _time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def origin(store: Store, source: Source) -> Origin:
    kind = SourceSpec.of(source).kind
    location = shown_location(shown_source(source, store).uri)  # a server's own paths stay behind auth
    if kind == "git":
        state = store.saved_state(GIT_STATE_KEY.format(source_id=source.source_id))
        read_at = _time(state.get("read_at")) or source.updated_at
        return Origin(kind, location, read_at, state.get("commit") or None, state.get("ref") or "HEAD")
    if kind == "web":
        state = store.saved_state(WEB_STATE_KEY.format(source_id=source.source_id))
        return Origin(kind, location, _time(state.get("crawled_at")) or source.updated_at)
    return Origin(kind, location, source.updated_at)


# -- what changed lately in git sources -----------------------------------------------------------


@dataclass(frozen=True)
class Update:
    """A file of a git source and the last commit that changed it."""

    source_id: str
    key: str
    title: str
    topic: str
    commit: str
    date: datetime
    subject: str
    source_ref: str
    url: str


def recent_updates(store: Store, settings: Settings, days: int, topic: str | None = None) -> list[Update]:
    """Files of git sources whose last change is at most `days` old (in `topic` if given), newest first.

    NotFound names the topics there are when `topic` is none of them.
    """
    since = datetime.now(UTC) - timedelta(days=days)
    found: list[Update] = []
    topics: set[str] = set()
    sources = (
        [s for s in store.find(Source, fields=["uri"]) if SourceSpec.of(s).kind == "git"] if store.has(Source) else []
    )
    for source in sources:
        files = store.saved_state(GIT_STATE_KEY.format(source_id=source.source_id)).get("files") or {}
        recent = {}
        for key, change in files.items():
            topics.add(topic_of(key))
            date = _time(change[1]) if isinstance(change, list) and len(change) == 3 else None
            if date is not None and date >= since and (topic is None or topic_of(key) == topic):
                recent[key] = (change[0], date, change[2])
        if not recent:
            continue
        match = {"source_id": source.source_id, "key": sorted(recent), "status": "ok"}
        fields = ["source_id", "key", "title", "uri", "url", "version"]
        for document in store.find(Document, match, fields=fields):
            commit, date, subject = recent[document.key]
            ref = SourceRef(source.source_id, document.key, document.version).base
            url = page_url(document, settings.base_url(source.source_id), settings)
            title = document.title or document.key
            found.append(
                Update(source.source_id, document.key, title, topic_of(document.key), commit, date, subject, ref, url)
            )
    if topic is not None and topic not in topics:
        known = ", ".join(sorted(topics)) or "(none: no git source is indexed)"
        raise NotFound(f"topic {topic!r} is not a top-level folder of a git source; topics: {known}", argument="topic")
    return sorted(found, key=lambda u: (-u.date.timestamp(), u.source_id, u.key))


def origins(store: Store, sources: list[Source]) -> dict[str, Origin]:
    """Each source's origin by id (what qurio_list_sources, list_collections and the console show)."""
    return {source.source_id: origin(store, source) for source in sources}
