"""Reliability check: a real server over a small index, fed what clients get wrong, and written to while read.

    python -m bench.reliability [--chunks 3000] [--writes 10] [--readers 4] [--db PATH]

One run, one server (`python -m thoth.mcp.server` on a loopback port, THOTH_TREES=off: the tree's
share of a write is measured by `bench.tree --events`; this is the table work):
1. Index: generated Markdown pages (bench.ingest.write_corpus) ingested by the real pipeline and model
   into about `--chunks` chunks, as dataset `handbook` (kept with `--db` for reruns).
2. Hostile queries: every text in bench/hostile.py against every search tool.
3. Malformed JSON-RPC: bad JSON, wrong types, unknown methods and tools, huge params, wrong verbs.
4. Write cost: `--writes` `ingest_document` calls of ~10 KB each (new documents), one after another:
   seconds per write, and the server's RSS before and after.
5. Concurrent reads during writes: `--readers` threads searching while `--writes` more documents are
   written; read latency against the same reads with no writer.
Printed: calls made, answers by kind (ok / tool error / JSON-RPC error code / HTTP status), HTTP 500s
(must be 0), what went wrong where an answer was not one of the expected kinds, and RSS. The exit
status is 1 when any answer was a 500 or unexpected.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx

from bench.hostile import HOSTILE_QUERIES
from bench.ingest import CHUNKS_PER_FILE, StubEmbedder, write_corpus
from bench.search import chunk_count, cpu_seconds, percentile, rss_mb, start_server
from bench.text import TOPICS, passage
from thoth.config import Settings
from thoth.embedders import get_embedder
from thoth.store import Store
from thoth.store.indexes import FOLD_IN_ROWS, FTS_COLUMN
from thoth.store.schema import CHUNKS
from thoth.writes.writer import Writer

WORKSHOP = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "workshops" / "caching-fundamentals"
DATASET = "handbook"
WRITE_DATASET = "notes"  # ingest_document writes only datasets it created
SEARCH_TOOLS = {
    "search_handbook": {"num_results": 3},
    "qurio_search": {"limit": 3},
    "search": {"top_k": 3},
    "rag_retrieve": {"dataset_id": DATASET, "top_k": 3},
    "retrieve_documents": {"dataset_id": DATASET, "top_k": 3},
    "answer_question": {"dataset_id": DATASET, "top_k": 3},
    "search_topic_context": {"limit": 3},
}
HUGE = "x" * 3_000_000  # over ingest_document's MAX_DOCUMENT_BYTES, under the HTTP body limit


class Tally:
    """Every answer by kind; the ones outside the expected kinds, with what came back."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.unexpected: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()

    def record(self, what: str, response: httpx.Response | Exception, expected: tuple[str, ...]) -> str:
        kind = classify(response)
        with self._lock:
            self.kinds[kind] += 1
            if kind not in expected and not (kind.startswith("JSON-RPC") and "JSON-RPC" in expected):
                detail = str(response) if isinstance(response, Exception) else response.text
                self.unexpected.append((what[:60], kind, detail[:200]))
        return kind

    @property
    def calls(self) -> int:
        return sum(self.kinds.values())


def classify(response: httpx.Response | Exception) -> str:
    if isinstance(response, Exception):
        return f"no answer ({type(response).__name__})"
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    try:
        body = response.json()
    except ValueError:
        return "HTTP 200, not JSON"
    if not isinstance(body, dict):
        return "HTTP 200, not an object"
    if "error" in body:
        return f"JSON-RPC {body['error'].get('code')}"
    return "tool error" if body.get("result", {}).get("isError") else "ok"


def post(client: httpx.Client, url: str, body: object = None, *, raw: bytes | None = None, **kw: object) -> object:
    try:
        if raw is not None:
            headers = {"content-type": "application/json", **kw.pop("headers", {})}  # type: ignore[dict-item]
            return client.post(f"{url}/mcp", content=raw, headers=headers, **kw)  # type: ignore[arg-type]
        return client.post(f"{url}/mcp", json=body, **kw)  # type: ignore[arg-type]
    except httpx.HTTPError as exc:
        return exc


def tool_call(name: str, arguments: object, id: object = 1) -> dict:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


# -- 1. the index --------------------------------------------------------------------------------


class StandInVectors(StubEmbedder):
    """The bulk of the index without embedding it: hash-based unit vectors under the real model's name
    and dimension, so the server (which embeds queries and written documents with the real model)
    accepts the index. Relevance over these chunks means nothing; this bench does not measure it."""

    def __init__(self, settings: Settings) -> None:
        model = get_embedder(settings)
        self.model_name, self.dim = model.model_name, model.dim


def build_index(settings: Settings, chunks: int, real: bool) -> tuple[int, float]:
    store = Store(settings)
    if chunk_count(store) >= chunks * 0.8:
        return chunk_count(store), 0.0
    with tempfile.TemporaryDirectory(prefix="thoth-reliability-corpus-") as tmp:
        corpus = Path(tmp) / DATASET
        write_corpus(corpus, max(1, round(chunks / CHUNKS_PER_FILE)), seed=11)
        started = time.perf_counter()
        ingestor = Writer(settings, embedder=None if real else StandInVectors(settings))  # type: ignore[arg-type]
        summary = ingestor.run(str(corpus), name=DATASET)
        if summary.failed:
            raise SystemExit(f"building the index failed: {summary.render()}")
    # search_topic_context searches workshops: one small one, with the real model
    Writer(settings).run(str(WORKSHOP))
    return chunk_count(Store(settings)), time.perf_counter() - started


# -- 2. hostile queries ---------------------------------------------------------------------------


def hostile(client: httpx.Client, url: str, tally: Tally) -> None:
    for tool, arguments in SEARCH_TOOLS.items():
        for query in HOSTILE_QUERIES:
            response = post(client, url, tool_call(tool, {**arguments, "query": query}))
            kind = tally.record(f"{tool} {query!r}", response, ("ok", "tool error"))
            if kind == "tool error" and "query" not in response.json()["result"]["content"][0]["text"]:  # type: ignore[union-attr]
                tally.unexpected.append((f"{tool} {query[:40]!r}", "tool error not naming query", response.text[:200]))  # type: ignore[union-attr]


# -- 3. malformed JSON-RPC -------------------------------------------------------------------------


def malformed(client: httpx.Client, url: str, tally: Tally) -> list[tuple[str, str]]:
    """Each case: (what, how to send it). A client's mistake may be a JSON-RPC error, a tool error or a
    4xx; never a 500, a hang or a dropped connection."""
    client_errors = ("JSON-RPC", "tool error", "HTTP 400", "HTTP 404", "HTTP 405", "HTTP 406", "HTTP 413", "HTTP 415")
    search = "search_handbook"
    cases: list[tuple[str, Callable[[], object]]] = [
        ("not JSON", lambda: post(client, url, raw=b"{not json")),
        ("truncated JSON", lambda: post(client, url, raw=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/li')),
        ("empty body", lambda: post(client, url, raw=b"")),
        ("a JSON string", lambda: post(client, url, "tools/list")),
        ("a JSON number", lambda: post(client, url, 42)),
        ("null", lambda: post(client, url, raw=b"null")),
        ("an empty batch", lambda: post(client, url, [])),
        ("a batch", lambda: post(client, url, [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}] * 3)),
        ("no method", lambda: post(client, url, {"jsonrpc": "2.0", "id": 1})),
        ("method a number", lambda: post(client, url, {"jsonrpc": "2.0", "id": 1, "method": 7})),
        ("jsonrpc 1.0", lambda: post(client, url, {"jsonrpc": "1.0", "id": 1, "method": "tools/list"})),
        ("id an object", lambda: post(client, url, {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"})),
        ("unknown method", lambda: post(client, url, {"jsonrpc": "2.0", "id": 1, "method": "tools/destroy"})),
        ("unknown tool", lambda: post(client, url, tool_call("no_such_tool", {}))),
        ("tool name a number", lambda: post(client, url, tool_call(12, {}))),  # type: ignore[arg-type]
        ("arguments a list", lambda: post(client, url, tool_call(search, ["deploy"]))),
        ("arguments a string", lambda: post(client, url, tool_call(search, "deploy"))),
        ("params a list", lambda: post(client, url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": []})),
        ("query a number", lambda: post(client, url, tool_call(search, {"query": 12}))),
        ("query null", lambda: post(client, url, tool_call(search, {"query": None}))),
        ("query a list", lambda: post(client, url, tool_call(search, {"query": ["a", "b"]}))),
        ("num_results a string", lambda: post(client, url, tool_call(search, {"query": "x", "num_results": "many"}))),
        ("num_results -1", lambda: post(client, url, tool_call(search, {"query": "x", "num_results": -1}))),
        ("num_results 10**30", lambda: post(client, url, tool_call(search, {"query": "x", "num_results": 10**30}))),
        ("unknown argument", lambda: post(client, url, tool_call(search, {"query": "x", "drop": "table"}))),
        ("a 3 MB query", lambda: post(client, url, tool_call(search, {"query": HUGE}))),
        ("a 3 MB unknown argument", lambda: post(client, url, tool_call(search, {"query": "x", "pad": HUGE}))),
        (
            "a 3 MB document",
            lambda: post(
                client, url, tool_call("ingest_document", {"dataset_id": WRITE_DATASET, "file_content": HUGE})
            ),
        ),  # fmt: skip
        (
            "deep nesting",
            lambda: post(
                client,
                url,
                raw=b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
            ),
        ),  # fmt: skip
        (
            "prompts/get unknown",
            lambda: post(client, url, {"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "nope"}}),
        ),  # fmt: skip
        (
            "resources/read unknown",
            lambda: post(
                client,
                url,
                {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "raptor://nope/nodes/x"}},
            ),
        ),  # fmt: skip
        ("text/plain body", lambda: post(client, url, raw=b"{}", headers={"content-type": "text/plain"})),
        ("GET /mcp", lambda: _safe(lambda: client.get(f"{url}/mcp", timeout=10))),
        ("DELETE /mcp", lambda: _safe(lambda: client.delete(f"{url}/mcp", timeout=10))),
    ]
    # tools ignore arguments they do not define; the SDK reads a message whose id is not a string or a
    # number as a notification (202, no body)
    also = {"unknown argument": ("ok",), "a 3 MB unknown argument": ("ok",), "id an object": ("HTTP 202",)}
    return [(what, tally.record(what, send(), client_errors + also.get(what, ()))) for what, send in cases]  # type: ignore[arg-type]


def _safe(fn: Callable[[], httpx.Response]) -> object:
    try:
        return fn()
    except httpx.HTTPError as exc:
        return exc


# -- 4. and 5. writes, alone and under reads ----------------------------------------------------------


def document(i: int, size: int = 10_000) -> str:
    rng = random.Random(1000 + i)
    text = f"# Note {i}\n\n"
    while len(text) < size:
        text += passage(rng, TOPICS[(i + len(text)) % len(TOPICS)], 6) + "\n\n"
    return text[:size]


def write(client: httpx.Client, url: str, i: int, tally: Tally, pid: int | None = None) -> tuple[float, float]:
    """(wall seconds, server CPU seconds) of one 10 KB ingest_document call (CPU only when `pid` is given)."""
    arguments = {"dataset_id": WRITE_DATASET, "file_content": document(i), "source": f"notes/note-{i:04d}.md"}
    cpu = cpu_seconds(pid) if pid else 0.0
    started = time.perf_counter()
    response = post(client, url, tool_call("ingest_document", arguments), timeout=600)
    seconds = time.perf_counter() - started
    tally.record(f"ingest_document {i}", response, ("ok",))
    return seconds, (cpu_seconds(pid) - cpu if pid else float("nan"))


def read_loop(url: str, tally: Tally, stop: threading.Event, times: list[float], seed: int) -> None:
    rng = random.Random(seed)
    with httpx.Client(timeout=120) as client:
        while not stop.is_set():
            tool = rng.choice(["search_handbook", "qurio_search", "retrieve_documents"])
            query = f"{rng.choice(TOPICS)} {rng.choice(['review', 'owner', 'deploy', 'budget'])}"
            started = time.perf_counter()
            response = post(client, url, tool_call(tool, {**SEARCH_TOOLS[tool], "query": query}))
            times.append((time.perf_counter() - started) * 1000)
            tally.record(f"{tool} during writes", response, ("ok",))


def reads_for(url: str, tally: Tally, readers: int, during: Callable[[], None] | None, seconds: float) -> list[float]:
    """Read latencies (ms) of `readers` threads while `during` runs (or for `seconds` without it)."""
    stop, times = threading.Event(), []
    threads = [threading.Thread(target=read_loop, args=(url, tally, stop, times, s)) for s in range(readers)]
    for t in threads:
        t.start()
    if during is not None:
        during()
    else:
        time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return times


def fold_in(settings: Settings) -> tuple[int, float]:
    """(chunks in the indexes' unindexed tail, seconds to fold them in): the table work a write pays
    once per FOLD_IN_ROWS new chunks (`Store.indexes.fold_in_due`), timed in process once the server is gone."""
    store = Store(settings)
    table = store.table(CHUNKS)
    name = next(i.name for i in table.list_indices() if FTS_COLUMN in i.columns)
    tail = table.index_stats(name).num_unindexed_rows
    started = time.perf_counter()
    store.indexes.ensure_fts(fold_in=True)
    return tail, time.perf_counter() - started


# -- the run -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reliability", description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=3000, help="size of the index to build (chunks)")
    parser.add_argument("--writes", type=int, default=10, help="10 KB ingest_document writes, alone and under reads")
    parser.add_argument("--readers", type=int, default=4, help="concurrent reading clients during writes")
    parser.add_argument(
        "--real-embeddings", action="store_true", help="embed the bulk of the index with the model (slow)"
    )
    parser.add_argument("--db", help="keep the index here and reuse it on the next run (default: a temp folder)")
    args = parser.parse_args(argv)

    tmp = None if args.db else tempfile.TemporaryDirectory(prefix="thoth-reliability-")
    db = Path(args.db) if args.db else Path(tmp.name) / "db"  # type: ignore[union-attr]
    cache_dir = str(Path(Settings.from_env().cache_dir).expanduser().resolve())
    settings = replace(
        Settings.from_env(db_uri=str(db), read_consistency_seconds=-1, cache_dir=cache_dir), tree_build=False
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall times move with it)")
    tally, server = Tally(), None
    try:
        chunks, build_s = build_index(settings, args.chunks, args.real_embeddings)
        print(f"index: {chunks:,} chunks" + (f", built in {build_s:.0f} s" if build_s else " (reused)"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
        env |= {"THOTH_DB_URI": str(db), "THOTH_CACHE_DIR": cache_dir, "THOTH_LOG_LEVEL": "ERROR"}
        env |= {"THOTH_TREES": "off", "HF_HUB_OFFLINE": "1"}
        server, url = start_server(env, patches={"thoth.config.READ_CONSISTENCY_SECONDS": 0})
        with httpx.Client(timeout=120) as client:
            tally.record("warm-up", post(client, url, tool_call("search_handbook", {"query": "deploy"})), ("ok",))
            rss_start = rss_mb(server.pid)

            started = time.perf_counter()
            hostile(client, url, tally)
            print(f"hostile queries: {len(HOSTILE_QUERIES)} texts x {len(SEARCH_TOOLS)} tools "
                  f"in {time.perf_counter() - started:.0f} s")  # fmt: skip
            answers = malformed(client, url, tally)

            # 4. the write cost: the first write creates the dataset, so it is not counted
            write(client, url, 0, tally)
            rss_before = rss_mb(server.pid)
            timed = [write(client, url, i, tally, server.pid) for i in range(1, args.writes + 1)]
            seconds, cpu = [t[0] for t in timed], [t[1] for t in timed]
            rss_after = rss_mb(server.pid)

        # 5. reads alone, then reads while the same number of writes happen
        alone = reads_for(url, tally, args.readers, None, seconds=max(5.0, sum(seconds)))
        during_writes: list[float] = []

        def writer() -> None:
            with httpx.Client(timeout=600) as client:
                during_writes.extend(write(client, url, i, tally)[0] for i in range(100, 100 + args.writes))

        during = reads_for(url, tally, args.readers, writer, 0)
        rss_end = rss_mb(server.pid)
        with httpx.Client(timeout=30) as client:
            health = client.get(f"{url}/health")
            tally.record("/health after the run", health, ("ok",))
        server.terminate()
        server.wait(timeout=30)
        server = None
        tail, fold_s = fold_in(settings)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if tmp is not None:
            tmp.cleanup()

    print("malformed requests: " + "; ".join(f"{what}: {kind}" for what, kind in answers))
    print()
    print(f"calls made: {tally.calls}")
    for kind, count in sorted(tally.kinds.items()):
        print(f"  {kind:<28} {count:>6}")
    errors_500 = tally.kinds.get("HTTP 500", 0)
    print(f"HTTP 500: {errors_500}")
    print(f"unexpected answers: {len(tally.unexpected)}")
    for what, kind, detail in tally.unexpected[:20]:
        print(f"  {what}: {kind}: {detail}")
    print()
    print(f"write cost (10 KB ingest_document, {chunks:,}-chunk index, no tree): "
          f"median {statistics.median(seconds):.2f} s, first {seconds[0]:.2f} s, last {seconds[-1]:.2f} s, "
          f"max {max(seconds):.2f} s over {len(seconds)} writes; server CPU median {statistics.median(cpu):.2f} s, "
          f"first {cpu[0]:.2f} s, last {cpu[-1]:.2f} s")  # fmt: skip
    print(f"table work: folding the {tail}-chunk unindexed tail into the indexes took {fold_s:.2f} s in process; "
          f"a write pays it once per {FOLD_IN_ROWS} new chunks")  # fmt: skip
    print(f"server RSS (MB): {rss_start['rss']:.0f} after warm-up, {rss_before['rss']:.0f} before the writes, "
          f"{rss_after['rss']:.0f} after {len(seconds)} writes, {rss_end['rss']:.0f} at the end "
          f"(anonymous {rss_end['anon']:.0f}, peak {rss_end['peak']:.0f})")  # fmt: skip
    print(f"reads ({args.readers} clients): p50 {percentile(alone, 50):.0f} ms / p95 {percentile(alone, 95):.0f} ms "
          f"alone ({len(alone)} calls); p50 {percentile(during, 50):.0f} ms / p95 {percentile(during, 95):.0f} ms "
          f"during {len(during_writes)} writes ({len(during)} calls; writes then took median "
          f"{statistics.median(during_writes):.2f} s)")  # fmt: skip
    print(json.dumps({"calls": tally.calls, "http_500": errors_500, "unexpected": len(tally.unexpected)}))
    return 1 if errors_500 or tally.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
