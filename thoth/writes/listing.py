"""What a run lists, by the kind of source: a folder or gs:// prefix (source_files.py), a website
(web.py) or a git repository (git_source.py), each within the source's scope (thoth/source_spec.py).
Web and git sources remember what the last run saw (validators, the commit) in the store's settings,
saved only after the run wrote its documents."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from thoth.config import Settings
from thoth.source_spec import GIT_STATE_KEY, WEB_STATE_KEY, SourceSpec
from thoth.store import Store
from thoth.writes import git_source, web
from thoth.writes.objects import SourceObject
from thoth.writes.parsers import workshop
from thoth.writes.source_files import list_bucket, list_folder


@dataclass
class Listing:
    objects: list[SourceObject]
    failures: list[tuple[str, str]] = field(default_factory=list)  # (key or URL, reason): in the run summary
    kind: str | None = None  # the collection's kind when the files do not decide it (a website, a workshop)
    state: dict[str, str] = field(default_factory=dict)  # settings to write once the run is written
    by_key: tuple[int, int] | None = None  # (task, tasks): this task's share of a crawl split by key
    name: str | None = None  # a workshop's own title and product
    product: str | None = None

    def save(self, store: Store) -> None:
        for key, value in self.state.items():
            if self.by_key is not None:  # the other tasks' pages stay in the state the next crawl starts from
                value = web.merged_state(store.saved_state(key), value, *self.by_key)
            store.metadata.set({key: value})


def list_source(store: Store, settings: Settings, spec: SourceSpec, source_id: str) -> Listing:
    """The objects of the source that its scope wants (the lister of each kind asks `spec.wants`)."""
    if spec.kind == "web":
        key = WEB_STATE_KEY.format(source_id=source_id)
        crawl = web.crawl(spec, settings, store.saved_state(key))
        share = (settings.task_index, settings.task_count) if crawl.split else None
        return Listing(crawl.objects, crawl.failures, "handbook", {key: crawl.state_json()}, share)
    if spec.kind == "git":
        key = GIT_STATE_KEY.format(source_id=source_id)
        read = git_source.read(spec, settings, store.saved_state(key))
        return Listing(read.objects, state={key: read.state_json()})
    if spec.kind == "bucket":
        return Listing([o for o in list_bucket(spec.location, settings) if spec.wants(o.key)])
    objects = [o for o in list_folder(spec.location) if spec.wants(o.key)]
    if workshop.is_workshop(Path(spec.location)):
        about = workshop.info(Path(spec.location))
        return Listing(objects, kind="workshop", name=about.title, product=about.product)
    return Listing(objects)
