"""Writers manage sources over MCP (issue 52): add_source, get_run, list_runs, refresh_source, cancel_run and
remove_source against a real server process on loopback, its runs real child processes, the sites real
HTTP servers on loopback (tests/web_site.py)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.conftest import LOOPBACK, ONNX_CACHE, make_settings, start_server_process, write_docs
from tests.test_auth import bearer
from tests.web_site import Site, guide_pages, serve
from thoth.records import Chunk, Document, IngestRun, Partition
from thoth.source_spec import SourceSpec
from thoth.store import Store
from thoth.writes import source_runs
from thoth.writes.launch import LaunchError, ingest_args, launch_cloud_run, records_here
from thoth.writes.run_records import RunSummary
from thoth.writes.run_watch import RunWatch
from thoth.writes.writer import Writer

READER = "reader-token-0123456789abcdef"
WRITER = "writer-token-0123456789abcdef"
SERVER_DB: dict[str, str] = {}  # each server's index, by its URL
SOURCE_TOOLS = {"add_source", "refresh_source", "remove_source", "list_runs", "get_run", "cancel_run"}
ENV = {
    "HF_HUB_OFFLINE": "1",
    "THOTH_CACHE_DIR": str(ONNX_CACHE),
    "THOTH_TREES": "off",
    "THOTH_AUTH": "tokens",
    "THOTH_AUTH_TOKENS": READER,
    "THOTH_AUTH_WRITER_TOKENS": WRITER,
}  # the crawls keep the default politeness (2 requests a second): the site is small
PATCHES = {
    "thoth.config.READ_CONSISTENCY_SECONDS": 0,  # the runs' writes are read at once
    "thoth.mcp.toolsets.raptor.DOCUMENT_RUN_BYTES": 4000,  # ingest_document of a longer text starts a run
}


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site(guide_pages(), ["/docs/", "/docs/install", "/docs/missing"])
    server = serve(served)
    yield served
    server.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, onnx_cache: Path) -> Iterator[str]:
    settings = make_settings(tmp_path_factory.mktemp("db") / "lancedb", cache_dir=str(onnx_cache), tree_build=False)
    assert not Writer(settings).run(str(write_docs(tmp_path_factory.mktemp("docs"))), name="docs").failed
    process, url = start_server_process(settings, patches=PATCHES, **ENV)
    SERVER_DB[url] = settings.db_uri
    yield url
    process.terminate()
    process.wait(timeout=30)


def call(url: str, token: str, name: str, arguments: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    answer = LOOPBACK.post(f"{url}/mcp", json=body, headers=bearer(token), timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def ok(url: str, name: str, arguments: dict) -> dict:
    result = call(url, WRITER, name, arguments)
    assert not result["isError"], result["content"][0]["text"]
    return result["structuredContent"]


def until_ended(url: str, run_id: str, timeout: float = 240) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        run = ok(url, "get_run", {"run_id": run_id})
        if run["state"] not in ("queued", "running"):
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.1)  # a get_run is cheap: the test goes on as soon as the run ends


def followed(server: str, name: str, arguments: dict) -> dict:
    """A call by the SDK's client with a progressToken: progress until the run ends, then the ended run."""
    notes: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append(message)

    async def call_it() -> CallToolResult:
        async with (
            httpx.AsyncClient(headers=bearer(WRITER), timeout=httpx.Timeout(30, read=300)) as http,
            streamable_http_client(f"{server}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool(name, arguments, progress_callback=progress)

    result = anyio.run(call_it)
    assert not result.is_error, result.content
    assert notes and all(message and message.startswith("Run ") for message in notes), notes
    return result.structured_content


def test_a_reader_sees_and_calls_none_of_them(server: str) -> None:
    def names(token: str) -> set[str]:
        answer = LOOPBACK.post(
            f"{server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=bearer(token)
        )
        return {t["name"] for t in answer.json()["result"]["tools"]}

    assert SOURCE_TOOLS <= names(WRITER) and not SOURCE_TOOLS & names(READER)
    refused = call(server, READER, "add_source", {"uri": "https://docs.example.com/"})
    assert refused["isError"] and "writer role" in refused["content"][0]["text"]


def test_bad_arguments_are_named(server: str) -> None:
    for arguments, words in [
        ({"uri": "/etc"}, "uri must be an http(s) website, a git URL"),
        ({"uri": "https://docs.example.com/", "include": [""]}, "include: each pattern must be a non-empty glob"),
        ({"uri": "https://x.example.com/r.git", "ref": "-x"}, "ref must be a branch, tag or commit"),
    ]:
        result = call(server, WRITER, "add_source", arguments)
        assert result["isError"] and words in result["content"][0]["text"], result
    missing = call(server, WRITER, "get_run", {"run_id": "nope"})
    assert missing["isError"] and "run_id 'nope' is not a recorded run" in missing["content"][0]["text"]
    assert call(server, WRITER, "refresh_source", {"source": "docs"})["isError"]  # a folder: the command line's


def test_add_source_then_get_run_until_done_then_search_refresh_and_remove(server: str, site: Site) -> None:
    started = ok(
        server, "add_source", {"uri": f"{site.url}/docs/", "name": "guide", "exclude": ["docs/big", "**/slow"]}
    )
    assert started["state"] in ("queued", "running") and started["source"] == "guide"
    run = until_ended(server, started["run_id"])
    assert run["state"] == "done" and run["trigger"] == "add_source", run
    assert run["added"] >= 5 and run["duration_seconds"] > 0 and run["files_done"] == run["files_total"]
    assert {f["key"]: f["reason"] for f in run["failures"]}[f"{site.url}/docs/missing"] == "HTTP 404"
    assert not any(p in ("/docs/big", "/docs/slow") for p, _, _ in site.requests)  # excluded: never fetched
    hits = ok(server, "qurio_search", {"query": "zebrafish setting in agent.toml", "source_id": "guide", "limit": 3})
    assert hits["results"] and hits["results"][0]["url"].startswith(f"{site.url}/docs/install")

    again = followed(server, "refresh_source", {"source": "guide"})  # a client that asked for progress
    assert again["state"] == "done" and again["added"] == 0 and again["unchanged"] == run["added"]
    assert not any(p in ("/docs/big", "/docs/slow") for p, _, _ in site.requests)  # the recorded scope applied
    listed = ok(server, "list_runs", {"source": "guide"})["runs"]
    assert [r["run_id"] for r in listed[:2]] == [again["run_id"], run["run_id"]]

    removed = ok(server, "remove_source", {"source": "guide"})
    assert removed["documents"] == run["added"] and removed["chunks"] > 0
    gone = call(server, WRITER, "qurio_search", {"query": "zebrafish", "source_id": "guide"})
    assert gone["isError"] or not gone["structuredContent"]["results"]


def test_a_long_ingest_document_is_a_run(server: str) -> None:
    text = "\n\n".join(f"Paragraph {i}: the lighthouse keeper logs the tide at {i} o'clock." for i in range(120))
    started = ok(server, "ingest_document", {"dataset_id": "logbook", "file_content": text, "source": "log.md"})
    assert started["status"] == "started" and started["run_id"] and started["chunks"] == 0
    run = until_ended(server, started["run_id"])
    assert run["state"] == "done" and run["trigger"] == "document" and run["added"] == 1, run
    hits = ok(server, "retrieve_documents", {"dataset_id": "logbook", "query": "lighthouse keeper tide"})
    assert "lighthouse keeper" in hits["results"][0]["text"]
    short = ok(server, "ingest_document", {"dataset_id": "logbook", "file_content": "A short note.", "source": "n.md"})
    assert short["status"] == "ingested" and short["run_id"] is None  # a short text is written at once


def rows(db: str, source_id: str) -> tuple[set, set, set]:
    store = Store(make_settings(Path(db)))
    scope = {"source_id": source_id}
    documents = {(d.key, d.doc_id, d.status) for d in store.find(Document, scope)}
    chunks = {(c.chunk_id, c.doc_id, c.text, c.source_ref) for c in store.find(Chunk, scope)}
    partitions = {(p.partition_id, p.doc_id, p.text) for p in store.find(Partition, scope)}
    return documents, chunks, partitions


def test_cancel_run_over_http(server: str, site: Site) -> None:
    started = ok(server, "add_source", {"uri": f"{site.url}/docs/", "name": "cancelled"})
    asked = ok(server, "cancel_run", {"run_id": started["run_id"]})
    assert asked["cancel_requested"] and asked["state"] in ("queued", "running")
    run = until_ended(server, started["run_id"])
    assert run["state"] == "cancelled" and run["added"] == 0, run
    assert rows(SERVER_DB[server], "cancelled") == (set(), set(), set())  # as if it never started
    assert ok(server, "cancel_run", {"run_id": started["run_id"]})["state"] == "cancelled"  # ended: nothing to do


def test_a_cancelled_run_leaves_what_a_run_of_the_written_files_leaves(
    tmp_path: Path, onnx_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between batches: a run writing a batch a file stops after the one it writes when cancel_run flags it."""
    folder = tmp_path / "notes"
    for i in range(80):
        (folder / f"n{i:02d}").mkdir(parents=True)
        (folder / f"n{i:02d}" / "note.md").write_text(
            f"# Note {i}\n\nNote {i} says that feature {i} ships in week {i}.\n"
        )
    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 1)
    settings = make_settings(tmp_path / "db", cache_dir=str(onnx_cache), tree_build=False)
    store = Store(settings)  # the run records itself, as one a Cloud Run service started does
    stop = threading.Event()
    ended: list[RunSummary] = []

    def run() -> None:
        with RunWatch(
            Store(settings),
            IngestRun(run_id="r1", source_id="notes", trigger="add_source", started_at=datetime.now(UTC)),
            stop,
        ) as watch:
            ended.append(
                Writer(settings).run(
                    str(folder), progress=lambda done, total, key: watch.progress(done, total), stop=stop
                )
            )

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 120
    while (recorded := store.runs.get("r1")) is None or recorded.done_files < 3:
        assert worker.is_alive() and time.monotonic() < deadline
        time.sleep(0.1)
    source_runs.flag_cancel(store, "r1")
    worker.join(timeout=120)
    assert ended and ended[0].interrupted
    documents, chunks, partitions = rows(settings.db_uri, "notes")
    assert 3 <= len(documents) < 80, len(documents)
    assert {c[1] for c in chunks} == {d[1] for d in documents} == {p[1] for p in partitions}  # nothing half-written

    written = tmp_path / "written" / "notes"  # a run that never started the others: only the written files
    for key, _, _ in documents:
        (written / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / key, written / key)
    reference = replace(settings, db_uri=str(tmp_path / "reference"))
    Writer(reference).run(str(written))
    assert rows(reference.db_uri, "notes") == (documents, chunks, partitions)


class AdminApi(BaseHTTPRequestHandler):
    """The Cloud Run Admin API's jobs.run, on loopback: it keeps what it was asked and answers an operation."""

    asked: ClassVar[list[tuple[str, str, dict]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 — the http.server protocol
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        AdminApi.asked.append((self.path, self.headers.get("Content-Type", ""), body))
        answer = json.dumps(
            {"name": "operations/1", "metadata": {"name": "projects/p/locations/r/jobs/j/executions/j-x1"}}
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer.encode())


def test_the_cloud_run_launcher_runs_the_job_with_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.auth.credentials import AnonymousCredentials

    api = ThreadingHTTPServer(("127.0.0.1", 0), AdminApi)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    monkeypatch.setattr("thoth.writes.launch.RUN_API_URL", f"http://127.0.0.1:{api.server_address[1]}")
    try:
        settings = make_settings(tmp_path / "db", ingest_job="projects/p/locations/r/jobs/j")
        spec = SourceSpec.parse("https://docs.example.com/guide/", exclude=["blog/**"])
        args = ingest_args(spec, "guide", "r9", settings.db_uri, trigger="add_source", started_by="email abc")
        assert (
            launch_cloud_run(settings, args, credentials=AnonymousCredentials())
            == "projects/p/locations/r/jobs/j/executions/j-x1"
        )
        with pytest.raises(LaunchError, match="THOTH_INGEST_JOB must name the ingest job"):
            launch_cloud_run(replace(settings, ingest_job=""), args, credentials=AnonymousCredentials())
    finally:
        api.shutdown()
    path, kind, body = AdminApi.asked[-1]
    assert path == "/v2/projects/p/locations/r/jobs/j:run" and kind == "application/json"
    override = body["overrides"]
    assert override["taskCount"] == 1 and override["containerOverrides"][0]["args"] == ["-m", "ingest", *args]
    assert args[:2] == ["--source", "https://docs.example.com/guide/"] and "--exclude" in args and "r9" in args
    assert not records_here(settings) and not Path(settings.db_uri).exists()  # the service only reads the index
