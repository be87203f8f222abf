"""A running server opens its tables once and sees new table versions (issue 17): a write made by another
process's Store (an ingest job) is searchable without a restart, through the same table handle."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LiveServer, call, make_settings, write_corpus
from thoth.writes.writer import Writer

NEW_PAGE = "# Zanzibar office\n\nThe Zanzibar office opens at nine and the quokka mascot greets visitors.\n"


def _sources(server: LiveServer, query: str) -> list[str]:
    result = call(server, "search_handbook", {"query": query, "num_results": 3})
    assert not result["isError"], result
    return [hit["source"] for hit in result["structuredContent"]["results"]]


def test_a_write_becomes_visible_to_a_running_server(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "corpus")
    settings = make_settings(tmp_path / "db")  # read consistency 0: every read checks for a newer version
    assert not Writer(settings).run(str(root), name="handbook").failed
    with LiveServer(settings) as server:
        assert "offices/zanzibar.md" not in _sources(server, "Zanzibar office quokka")
        store = server.server.config.app.state.thoth.store
        chunks = store.table("chunks")  # the handle the searches above used
        version = chunks.version

        (root / "offices").mkdir()
        (root / "offices" / "zanzibar.md").write_text(NEW_PAGE)
        assert not Writer(make_settings(tmp_path / "db")).run(str(root), name="handbook").failed

        assert _sources(server, "Zanzibar office quokka")[0] == "offices/zanzibar.md"
        assert store.table("chunks") is chunks and chunks.version > version  # not reopened: refreshed
