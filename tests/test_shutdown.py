"""SIGTERM, as Cloud Run sends it: the server finishes requests in flight; the ingest job stops after a batch.

Real processes: `python -m thoth.mcp.server` and `python -m ingest` started as Cloud Run starts them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, make_settings, write_corpus
from thoth.config import Settings
from thoth.records import Chunk, Document
from thoth.source_ref import content_hash
from thoth.store import Store
from thoth.writes.documents import ingest_text
from thoth.writes.writer import Writer

ROOT = Path(__file__).resolve().parent.parent


def env_for(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOTH_", "K_", "CLOUD_RUN_"))}
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


def wait_for(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigterm_lets_the_request_in_flight_finish(indexed: Settings, tmp_path: Path) -> None:
    port = free_port()
    stderr = tmp_path / "server.log"
    env = env_for(
        THOTH_DB_URI=indexed.db_uri,
        THOTH_HOST="127.0.0.1",
        PORT=str(port),
        THOTH_EMBED_PROVIDER="sentence-transformers",  # torch loads for seconds: the first search is slow
        THOTH_LOG_LEVEL="DEBUG",  # "tool ... started" says when the request is in flight
        K_SERVICE="thoth-test",  # JSON log lines, as on Cloud Run
        THOTH_GCP_PROJECT="demo-project",
        HF_HUB_DISABLE_PROGRESS_BARS="1",  # the torch backend's weight-loading bar is not a log line
    )
    grace = {"thoth.mcp.server.SHUTDOWN_GRACE_SECONDS": 120}  # generous on a busy test machine
    command = [sys.executable, "-m", "tests.patched", json.dumps(grace), "thoth.mcp.server:main"]
    with stderr.open("w") as err:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stderr=err)
    try:
        wait_for(lambda: _healthy(port, proc, stderr), 60, "/health")
        result: dict = {}

        def slow_request() -> None:
            body = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "search_handbook", "arguments": {"query": "how to request time off"}},
            }
            response = httpx.post(
                f"http://127.0.0.1:{port}/mcp",
                json=body,
                headers={"X-Cloud-Trace-Context": "0af7651916cd43dd8448eb211c80319c/1;o=1"},
                timeout=180,
            )
            result["status"], result["body"] = response.status_code, response.json()

        # SIGTERM only once the server is working on the request (it waits for the model to load)
        sigterm_while(proc, stderr, "search_handbook", slow_request)
    finally:
        stop(proc)

    assert result["status"] == 200, result
    hits = result["body"]["result"]["structuredContent"]["results"]
    assert hits and hits[0]["source"] == "people/time-off.md"  # the whole answer, not a cut-off one

    entries = [json.loads(line) for line in stderr.read_text().splitlines() if line.strip()]  # all JSON
    messages = [e["message"] for e in entries]
    shutting_down = next(i for i, m in enumerate(messages) if m.startswith("Shutting down"))
    answered = next(
        i for i, e in enumerate(entries) if e.get("tool") == "search_handbook" and "answered" in e["message"]
    )
    assert shutting_down < answered, messages  # SIGTERM came while the request was in flight
    assert entries[answered]["logging.googleapis.com/trace"] == (
        "projects/demo-project/traces/0af7651916cd43dd8448eb211c80319c"
    )
    assert any(m.startswith("Finished server process") for m in messages[answered:])


def chunk_ids(settings: Settings) -> set[str]:
    store = Store(settings)
    return {chunk.chunk_id for chunk in store.find(Chunk, fields=[])}


def test_ingest_stops_after_a_batch_and_a_rerun_completes(
    indexed: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    monkeypatch.setattr("thoth.writes.writer.BATCH_CHUNKS", 1)  # every file is a batch of its own
    settings = make_settings(tmp_path / "db")
    stop = threading.Event()

    def progress(done: int, total: int, key: str) -> None:
        if done == 2:
            stop.set()  # as the SIGTERM handler would, while file 2's batch was being written

    first = Writer(settings).run(str(corpus), name="handbook", progress=progress, stop=stop)
    assert first.interrupted and len(first.ingested) == 2
    assert "run again" in first.render()
    assert Store(settings).count_of(Document) == 2

    second = Writer(settings).run(str(corpus), name="handbook")
    assert not second.interrupted and second.unchanged == 2 and len(second.ingested) == 3
    assert chunk_ids(settings) == chunk_ids(indexed)  # the same tables as one clean run
    assert Store(settings).count_of(Document) == Store(indexed).count_of(Document)


def test_ingest_job_exits_143_on_sigterm_and_says_so(indexed: Settings, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    db = tmp_path / "db"
    env = env_for(K_SERVICE="thoth-test", THOTH_EMBED_PROVIDER="sentence-transformers")  # JSON lines
    cmd = [sys.executable, "-m", "ingest", "--source", str(corpus), "--db", str(db), "--name", "handbook"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if "to ingest" in line:  # planned; the model is loading now
                proc.send_signal(signal.SIGTERM)
                break
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = "".join(seen) + err
    assert proc.returncode == 143, log
    assert "SIGTERM received: stopping after the current batch" in log
    assert "interrupted" in out and "exit code 143" in log

    rerun = Writer(make_settings(db)).run(str(corpus), name="handbook")
    assert not rerun.interrupted and not rerun.failed
    assert chunk_ids(make_settings(db)) == chunk_ids(indexed)


def note_text(version: int, sentences: int) -> str:
    lines = (f"Version {version}, rule {i}: the vault door is checked by shift {i % 9}.\n" for i in range(sentences))
    return "".join(lines)


def test_sigterm_stops_a_long_write_retryably_and_the_document_stays_whole(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "db")
    writer = Writer(settings)
    ingest_text(writer, writer.store, "notes", note_text(1, 20), "vault.md")  # the version to keep
    before = {c.chunk_id for c in Store(settings).find(Chunk, {"source_id": "notes"}, fields=[])}
    port = free_port()
    stderr = tmp_path / "server.log"
    env = env_for(
        THOTH_DB_URI=settings.db_uri,
        THOTH_HOST="127.0.0.1",
        PORT=str(port),
        THOTH_TREES="off",
        THOTH_LOG_LEVEL="DEBUG",  # "tool ... started" says when the write is in flight
    )
    patches = {
        "thoth.mcp.server.SHUTDOWN_GRACE_SECONDS": 4,  # the write may go on for 1 s, then stops before writing rows
        "thoth.mcp.toolsets.raptor.DOCUMENT_RUN_BYTES": 16_777_216,  # the server writes the long text, not a run
    }
    command = [sys.executable, "-m", "tests.patched", json.dumps(patches), "thoth.mcp.server:main"]
    with stderr.open("w") as err:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stderr=err)
    result: dict = {}
    try:
        wait_for(lambda: _healthy(port, proc, stderr), 60, "/health")

        def long_write() -> None:  # thousands of chunks: embedding alone takes far longer than the grace
            arguments = {"dataset_id": "notes", "file_content": note_text(2, 6000), "source": "vault.md"}
            body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
            body["params"] = {"name": "ingest_document", "arguments": arguments}
            response = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, timeout=180)
            result["status"], result["body"] = response.status_code, response.json()

        sigterm_while(proc, stderr, "ingest_document", long_write)
    finally:
        stop(proc)

    assert result["status"] == 200, result  # an answer, not a cut connection or a plain 500
    answer = result["body"]["result"]
    assert answer["isError"], answer
    assert "shutting down" in answer["content"][0]["text"] and "retry" in answer["content"][0]["text"]
    store = Store(settings)
    (document,) = store.find(Document, {"source_id": "notes", "key": "vault.md"})
    assert document.doc_id == content_hash(note_text(1, 20).encode())  # the old version, whole
    assert {c.chunk_id for c in store.find(Chunk, {"source_id": "notes"}, fields=[])} == before


def sigterm_while(proc: subprocess.Popen, stderr: Path, tool: str, request) -> None:  # type: ignore[no-untyped-def]
    """Run `request` on a thread, SIGTERM the server once it logged `tool` started, wait for both to end."""
    client = threading.Thread(target=request)
    client.start()
    wait_for(lambda: f"tool {tool} started" in stderr.read_text(), 120, f"{tool} to start")
    proc.send_signal(signal.SIGTERM)
    client.join(timeout=180)
    # uvicorn, having finished, re-raises the signal it caught: the process ends as SIGTERM's
    assert proc.wait(timeout=180) == -signal.SIGTERM


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _healthy(port: int, proc: subprocess.Popen, stderr: Path) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return proc.poll() is not None and pytest.fail(f"server exited: {stderr.read_text()}")
