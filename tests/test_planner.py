"""The planner (thoth/writes/planner.py) on records alone: stored documents and a listing in, a plan out."""

from __future__ import annotations

from dataclasses import replace

from thoth.records import Document
from thoth.source_ref import content_hash
from thoth.writes.objects import SourceObject, in_shard
from thoth.writes.parsers import parser_version
from thoth.writes.planner import plan


def obj(key: str, text: str, version: str | None = None) -> SourceObject:
    data = text.encode()
    return SourceObject(key, f"file:///{key}", len(data), lambda: data, version=version)


def stored(key: str, text: str, status: str = "ok", version: str | None = None) -> Document:
    """A documents row as a run writes it: the content's hash is its id and its fingerprint."""
    digest = content_hash(text.encode())
    parser = parser_version(key)
    return Document(digest, "s", key, status=status, version=version, fingerprint=digest, parser=parser)


def by_key(*rows: Document) -> dict[str, Document]:
    return {row.key: row for row in rows}


def test_a_new_source_is_all_to_do_and_an_unchanged_one_is_nothing() -> None:
    listing = [obj("a.md", "alpha"), obj("b.md", "beta")]
    first = plan("s", {}, listing)
    assert [o.key for o in first.todo] == ["a.md", "b.md"] and not first.removed and not first.known
    again = plan("s", by_key(stored("a.md", "alpha"), stored("b.md", "beta")), listing)
    assert again.empty and again.unchanged == 2 and again.known == {"a.md", "b.md"}


def test_a_changed_file_replaces_its_content_and_a_gone_one_is_removed() -> None:
    old_a, old_b = stored("a.md", "alpha"), stored("b.md", "beta")
    result = plan("s", by_key(old_a, old_b), [obj("a.md", "alpha, edited")])
    assert [o.key for o in result.todo] == ["a.md"] and result.removed == ["b.md"]
    assert result.stale == {old_a.doc_id, old_b.doc_id}
    assert result.replaced == {"a.md": old_a.doc_id}  # dropped once the new version is written
    assert result.stored == set() and result.referenced == set()


def test_content_still_listed_under_another_key_is_not_stale() -> None:
    """A file renamed (or copied): its content stays, its chunks are repointed to a key that exists."""
    old = stored("old.md", "same words")
    result = plan("s", by_key(old), [obj("new.md", "same words")])
    assert [o.key for o in result.todo] == ["new.md"] and result.removed == ["old.md"]
    assert result.stale == set() and result.referenced == {old.doc_id} and result.stored == {old.doc_id}


def test_only_missing_plans_new_keys_and_removes_nothing() -> None:
    result = plan("s", by_key(stored("a.md", "alpha"), stored("b.md", "beta")), [obj("a.md", "new"), obj("c.md", "c")])
    assert {o.key for o in result.todo} == {"a.md", "c.md"} and result.removed == ["b.md"]
    missing = plan(
        "s",
        by_key(stored("a.md", "alpha"), stored("b.md", "beta")),
        [obj("a.md", "new"), obj("c.md", "c")],
        only_missing=True,
    )
    assert [o.key for o in missing.todo] == ["c.md"] and not missing.removed and not missing.stale


def test_a_new_generation_is_a_change_and_a_bibtex_sidecar_is_kept_apart() -> None:
    row = stored("p.pdf", "paper", version="1")
    assert plan("s", by_key(row), [obj("p.pdf", "paper", version="1")]).empty
    assert [o.key for o in plan("s", by_key(row), [obj("p.pdf", "paper", version="2")]).todo] == ["p.pdf"]
    with_bib = plan("s", by_key(row), [obj("p.pdf", "paper", version="1"), obj("p.pdf.bib", "@misc{x}")])
    assert [o.key for o in with_bib.todo] == ["p.pdf"]  # only its BibTeX is new: its row is rewritten
    assert set(with_bib.sidecars) == {"p.pdf.bib"} and with_bib.stored == {row.doc_id}  # its chunks are kept


def test_an_older_parsers_document_is_read_again_and_not_reused() -> None:
    row = replace(stored("p.pdf", "paper"), parser="pdf-0")
    result = plan("s", by_key(row), [obj("p.pdf", "paper")])
    assert [o.key for o in result.todo] == ["p.pdf"] and row.doc_id not in result.stored


def test_parallel_tasks_share_the_work_by_content_and_together_do_it_once() -> None:
    rows = by_key(*(stored(f"{i}.md", f"old {i}") for i in range(6)))
    listing = [obj(f"{i}.md", f"new {i}" if i % 2 else f"old {i}") for i in range(8)]
    whole = plan("s", rows, listing)
    shares = [plan("s", rows, listing, task=(i, 3)) for i in range(3)]
    assert sorted(o.key for p in shares for o in p.todo) == sorted(o.key for o in whole.todo)
    assert set().union(*(p.stale for p in shares)) == whole.stale
    for i, share in enumerate(shares):
        assert all(in_shard(share.fingerprints[o.key], i, 3) for o in share.todo)


def test_a_crawl_split_by_key_leaves_the_other_tasks_keys_alone() -> None:
    rows = by_key(*(stored(f"{i}.md", f"page {i}") for i in range(10)))
    mine = [k for k in rows if in_shard(k, 1, 2)]
    result = plan("s", rows, [obj(k, f"page {k[0]}") for k in mine[1:]], task=(1, 2), by_key=True)
    assert result.removed == [mine[0]] and result.known == set(mine)  # only its own keys are its business
    assert result.stored == {rows[k].doc_id for k in mine[1:]}  # another task's content is never reused


def test_an_object_event_plans_its_key_only_and_a_delete_is_the_key_unlisted() -> None:
    rows = by_key(stored("a.md", "alpha"), stored("b.md", "beta"), stored("copy.md", "beta"))
    event = plan("s", rows, [obj("a.md", "alpha, edited")], keys={"a.md"}, tags=["t"])
    assert [o.key for o in event.todo] == ["a.md"] and not event.removed and event.tags == ("t",)
    assert event.stale == {rows["a.md"].doc_id} and event.stored == {rows["b.md"].doc_id}
    redelivered = plan("s", rows, [obj("b.md", "beta")], keys={"b.md"})
    assert redelivered.empty and redelivered.unchanged == 1
    deleted = plan("s", rows, [], keys={"b.md"})
    assert deleted.removed == ["b.md"] and deleted.stale == set()  # copy.md still has that content
    assert deleted.referenced == {rows["b.md"].doc_id}
    assert plan("s", rows, [], keys={"a.md"}).stale == {rows["a.md"].doc_id}
    assert plan("s", rows, [], keys=set()).empty  # a delete of another generation than the stored one
