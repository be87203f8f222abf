"""search_handbook with an access file of 50 collections (THOTH_ACCESS_FILE) against no file, and against
the commit before the access file, over HTTP, alternated.

    git worktree add /tmp/before <the commit before THOTH_ACCESS_FILE>
    python -m bench.access --against /tmp/before --rounds 6

The index (built once under --db, reused): 50 collections written by the real write path, each a few
Markdown pages of generated handbook text (bench.text). Each round starts one server per configuration,
in turn, over that index, each as behind Cloud Run's IAM check (THOTH_AUTH=off,
THOTH_TRUST_CLOUD_RUN_IAM=true) called without an identity token: the same auth work in all, and a
caller with no email, whom only `*` names:

- `before`: the other checkout's server, which has no access file;
- `no file`: this checkout's server without THOTH_ACCESS_FILE (every caller reads everything);
- `file`: this checkout's server with a file naming the 50 collections, 10 of them shared with someone
  else, so the caller reads 40 and every search carries the prefilter.

Each server answers `--calls` search_handbook calls from one client, one after the other (the same
queries for all); a round gives each configuration's mean wall ms per call and the server's CPU ms per
call. The machine is shared and noisy: read the ratios of the means over the rounds and their spread.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path

import httpx

from bench.search import call, cpu_seconds, start_server
from bench.text import TOPICS, passage, queries

COLLECTIONS = 50
HIDDEN = 10  # of them shared with someone other than the caller
LIST_COLLECTIONS = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_collections"}}


def access_file(path: Path) -> Path:
    lines = ["default:", '  readers: ["*"]', "collections:"]
    for n in range(COLLECTIONS):
        readers = '["hr@example.com", "domain:people.example.com"]' if n < HIDDEN else '["*"]'
        lines += [f"  c{n:02d}:", f"    readers: {readers}", '    writers: ["alice@example.com"]']
    path.write_text("\n".join(lines) + "\n")
    return path


def build(db: Path, pages: int) -> None:
    """The 50 collections, each `pages` Markdown pages, written by the ingest path (no trees)."""
    from dataclasses import replace

    from thoth.config import Settings
    from thoth.writes.writer import Writer

    settings = replace(Settings.from_env({}, db_uri=str(db)), tree_build=False)
    rng = random.Random(5)
    writer = Writer(settings)
    for n in range(COLLECTIONS):
        folder = db.parent / "sources" / f"c{n:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for p in range(pages):
            topic = TOPICS[(n + p) % len(TOPICS)]
            body = "\n\n".join(passage(rng, topic, 6) for _ in range(3))
            (folder / f"page-{p}.md").write_text(f"# {topic.title()} {n}-{p}\n\n{body}\n")
        summary = writer.run(str(folder), name=f"c{n:02d}")
        assert not summary.failed, summary.render()
        print(f"  wrote collection {n + 1} / {COLLECTIONS}", flush=True)


def run(checkout: Path, db: Path, asked: list[str], access: Path | None) -> tuple[float, float]:
    """(wall ms, server CPU ms) per search_handbook call, for one server of `checkout`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
    env |= {"PYTHONPATH": str(checkout), "THOTH_DB_URI": str(db), "THOTH_LOG_LEVEL": "WARNING"}
    env |= {"THOTH_AUTH": "off", "THOTH_TRUST_CLOUD_RUN_IAM": "true"}
    if access is not None:
        env["THOTH_ACCESS_FILE"] = str(access)
    server, url = start_server(env)
    try:
        with httpx.Client(timeout=120) as client:
            if access is not None:  # the caller is the restricted one: the file applies
                listed = client.post(f"{url}/mcp", json=LIST_COLLECTIONS).text
                assert '"c00"' not in listed and '"c10"' in listed, listed[:300]
            for q in asked[:10]:
                call(client, url, q, 5)
            cpu = cpu_seconds(server.pid)
            started = time.perf_counter()
            for q in asked[10:]:
                call(client, url, q, 5)
            wall = time.perf_counter() - started
            cpu = cpu_seconds(server.pid) - cpu
    finally:
        server.terminate()
        server.wait()
    n = len(asked) - 10
    return wall * 1000 / n, cpu * 1000 / n


def spread(ratios: list[float]) -> str:
    if len(ratios) < 2:
        return f"{ratios[0]:.3f}"
    mean, sd = statistics.mean(ratios), statistics.stdev(ratios)
    return f"{mean:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, sd {sd:.3f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.access")
    parser.add_argument("--db", default="/tmp/thoth-bench-access/lancedb", help="the index (built if absent)")
    parser.add_argument("--against", required=True, help="the checkout of the commit before (a git worktree)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--pages", type=int, default=8, help="Markdown pages per collection")
    args = parser.parse_args(argv)
    db = Path(args.db)
    if not db.exists():
        build(db, args.pages)
    access = access_file(db.parent / "access.yaml")
    here = Path(__file__).resolve().parent.parent
    configurations = {"before": (Path(args.against), None), "no file": (here, None), "file": (here, access)}
    asked = queries(args.calls + 10, seed=17)
    wall: dict[str, list[float]] = {name: [] for name in configurations}
    cpu: dict[str, list[float]] = {name: [] for name in configurations}
    for r in range(args.rounds):
        order = list(configurations) if r % 2 == 0 else list(reversed(configurations))  # ABC CBA
        for name in order:
            checkout, file = configurations[name]
            ms, cpu_ms = run(checkout, db, asked, file)
            wall[name].append(ms)
            cpu[name].append(cpu_ms)
        print(f"round {r + 1}: " + ", ".join(f"{n} {wall[n][-1]:.2f} ms ({cpu[n][-1]:.2f} CPU)" for n in wall))
    for measure, figures in (("wall ms/call", wall), ("server CPU ms/call", cpu)):
        print(f"\n{measure}: " + ", ".join(f"{n} {statistics.mean(v):.2f}" for n, v in figures.items()))
        for base in ("before", "no file"):
            ratios = [f / b for f, b in zip(figures["file"], figures[base], strict=True)]
            print(f"  file / {base}: {spread(ratios)}")
        ratios = [f / b for f, b in zip(figures["no file"], figures["before"], strict=True)]
        print(f"  no file / before: {spread(ratios)}")


if __name__ == "__main__":
    main()
