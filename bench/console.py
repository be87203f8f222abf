"""The console (/ui): server time of each page, from its Server-Timing header, on the `make demo` index.

    python -m bench.console [--db ./.thoth/lancedb] [--repeat 20] [--many 1000]

Without --db it builds the demo index in a temporary folder the way `make demo` does (examples/handbook
as `handbook`, the example PDFs as `reports`) plus the example workshop, so every page has something to
show; `--many N` adds a collection of N one-paragraph files, to see a long list paged. The server runs
on a loopback port; each page is fetched `--repeat` times after one warm-up fetch, and the median and the
worst server time (the handler: reading the index and rendering the template) are printed beside the
median time the client waited. The issue's bar: every page within 100 ms of server time.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from examples.pdfgen import write_demo_pdfs
from thoth.config import Settings
from thoth.mcp.server import create_app
from thoth.records import Document, Source
from thoth.retrieval import tree
from thoth.store import Store
from thoth.writes.writer import Writer

ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = ROOT / "tests" / "fixtures" / "workshops" / "caching-fundamentals"
BAR_MS = 100.0


def build_demo(folder: Path, many: int) -> Settings:
    settings = Settings.from_env(db_uri=str(folder / "lancedb"), read_consistency_seconds=0.0)
    ingestor = Writer(settings)
    write_demo_pdfs(folder / "pdfs")
    ingestor.run(str(ROOT / "examples" / "handbook"), name="handbook")
    ingestor.run(str(folder / "pdfs"), name="reports")
    ingestor.run(str(WORKSHOP))
    if many:
        notes = folder / "notes"
        notes.mkdir()
        for i in range(many):
            (notes / f"note-{i:05d}.md").write_text(f"# Note {i}\n\nMeeting note {i}: item {i * 7 % 97} was agreed.\n")
        ingestor.run(str(notes), name="notes")
    return settings


def pages(store: Store) -> list[tuple[str, str]]:
    """(label, path) of each kind of page, on what the index holds."""
    sources = {source.source_id: source for source in store.find(Source, fields=["kind", "has_tree"])}
    pdf = next((s for s, source in sources.items() if source.kind == "pdf"), next(iter(sources)))
    doc_id = store.first(Document, {"source_id": pdf}, fields=[]).doc_id
    found = [
        ("collections", "/ui/"),
        (f"collection {pdf}", f"/ui/collections/{pdf}"),
        (f"collection {pdf}, failed", f"/ui/collections/{pdf}?status=failed"),
        ("document", f"/ui/documents/{doc_id}"),
        ("search hybrid", "/ui/search?q=how+do+I+deploy&mode=hybrid"),
        ("search keyword", "/ui/search?q=how+do+I+deploy&mode=keyword"),
        ("search vector", "/ui/search?q=how+do+I+deploy&mode=vector"),
    ]
    if "notes" in sources:
        found += [
            ("collection of many, page 1", "/ui/collections/notes"),
            ("collection of many, by date, page 10", "/ui/collections/notes?sort=date&order=desc&page=10"),
        ]
    with_tree = next((s for s, source in sources.items() if source.has_tree), None)
    if with_tree:
        sizes = tree.level_sizes(store, with_tree)
        _, (top, *_) = tree.level_nodes(store, with_tree, len(sizes) - 1, 1)
        leaf = top.node_id
        while (node := tree.get_node(store, leaf)).level:  # down the first children to a chunk
            leaf = node.children[0]
        found += [
            (f"tree {with_tree}", f"/ui/trees/{with_tree}"),
            ("tree level 0", f"/ui/trees/{with_tree}?level=0"),
            ("top node", f"/ui/trees/{with_tree}/nodes/{top.node_id}"),
            ("chunk node (path to root)", f"/ui/trees/{with_tree}/nodes/{leaf}"),
        ]
    workshop = next((s for s, source in sources.items() if source.kind == "workshop"), None)
    if workshop:
        found += [
            ("workshop", f"/ui/workshops/{workshop}"),
            ("workshop learning context", f"/ui/workshops/{workshop}?exercise=1&step=1"),
        ]
    return found


def measure(url: str, repeat: int) -> tuple[float, float, float]:
    """(median server ms, worst server ms, median client ms) of `repeat` fetches after a warm-up."""
    with httpx.Client(timeout=120) as client:
        client.get(url).raise_for_status()
        server, client_ms = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            response = client.get(url)
            client_ms.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
            server.append(float(response.headers["server-timing"].split("dur=")[1]))
    return statistics.median(server), max(server), statistics.median(client_ms)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.console", description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="an existing index (default: build the demo index in a temporary folder)")
    parser.add_argument("--repeat", type=int, default=20, help="fetches per page")
    parser.add_argument("--many", type=int, default=1000, help="files in the extra `notes` collection (0: none)")
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)  # the ingest's progress and the server's access lines
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        settings = Settings.from_env(db_uri=args.db) if args.db else build_demo(Path(tmp), args.many)
        print(f"index: {settings.db_uri} (ready in {time.perf_counter() - started:.0f} s)", flush=True)
        app = create_app(settings)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", log_config=None)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"{'page':42} {'server median':>14} {'server worst':>13} {'client median':>14}")
        worst = 0.0
        for label, path in pages(Store(settings)):
            median, high, client = measure(f"http://127.0.0.1:{port}{path}", args.repeat)
            worst = max(worst, median)
            print(f"{label:42} {median:11.1f} ms {high:10.1f} ms {client:11.1f} ms", flush=True)
        verdict = "within" if worst <= BAR_MS else "over"
        print(f"slowest page median: {worst:.1f} ms ({verdict} the {BAR_MS:.0f} ms bar)")
        server.should_exit = True
        thread.join(timeout=15)


if __name__ == "__main__":
    main()
