"""Cold start: process start -> /health 200 -> first `search_handbook` answered, ONNX against torch.

    python -m bench.coldstart [--runs 5] [--files 20] [--backends onnx,torch] [--bytecode]

Builds a small index once, then starts `python -m thoth.mcp.server` `--runs` times per backend
(alternating, so load on the machine hits both alike) and measures from `Popen` to the first
/health 200 and to the first search answer over MCP. Prints medians, the spread, the server's RSS
after its first answer with the CPU seconds it used until then, and the ONNX/torch ratio.
A bare `python -c pass` is timed too, and the CPU time of importing just the MCP SDK's server and
lancedb in a fresh process: imports hold the GIL, so no start can be faster than that on this CPU.
Target (issue 17): the first answer within that import floor + 0.5 s, as wall time and as CPU time
(the server's CPU seconds to its first answer against the imports' CPU seconds: steady on a busy machine).
It prints too each start's CPU over the floor measured in the same round (median and range): the steadier
figure where the machine's speed drifts from one round to the next.
`--bytecode` compiles Thoth's modules first, as `pip install` does in the image: where PYTHONDONTWRITEBYTECODE
is set (this machine) every start otherwise compiles them from source, the floor's process and the server alike.
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import thoth
from bench.search import cpu_seconds, free_port, rss_mb
from bench.text import TOPICS, passage
from thoth.config import Settings
from thoth.writes.writer import Writer

HEALTH_POLL_S = 0.01
PROVIDERS = {"onnx": "local", "torch": "sentence-transformers"}  # each backend, as THOTH_EMBED_PROVIDER names it


def write_corpus(folder: Path, files: int) -> None:
    rng = random.Random(7)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        sections = "\n\n".join(f"## {topic.title()} {j}\n\n{passage(rng, topic, 6)}" for j in range(4))
        (folder / f"{topic.replace(' ', '-')}-{i}.md").write_text(f"# {topic.title()}\n\n{sections}\n")


def one_start(env: dict[str, str], port: int, query: str) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_handbook", "arguments": {"query": query, "num_results": 3}},
    }
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "thoth.mcp.server"], env={**env, "PORT": str(port)})
    try:
        with httpx.Client(timeout=60) as client:
            while True:
                try:
                    if client.get(f"{url}/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if server.poll() is not None:
                    raise RuntimeError(f"the server exited with {server.returncode}")
                if time.perf_counter() - started > 120:
                    raise RuntimeError("no /health 200 within 120 s")
                time.sleep(HEALTH_POLL_S)
            health = time.perf_counter() - started
            result = client.post(f"{url}/mcp", json=body).json()["result"]
            answer = time.perf_counter() - started
            cpu = cpu_seconds(server.pid)  # what the start cost the server, whatever else the machine runs
        if result["isError"] or not result["structuredContent"]["results"]:
            raise RuntimeError(f"the first search failed: {result}")
        return {"health": health, "answer": answer, "cpu": cpu, "rss": rss_mb(server.pid)["rss"]}
    finally:
        server.terminate()
        server.wait(timeout=30)


def bare_python() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


_IMPORT_FLOOR = """
import time
started, wall = time.process_time(), time.perf_counter()
import mcp.server.mcpserver, mcp.server.sse, mcp.server.streamable_http_manager
from thoth.store.lance import lancedb
lancedb()
print(time.process_time() - started, time.perf_counter() - wall)
"""


def import_floor() -> tuple[float, float]:
    """CPU and wall seconds to import the MCP SDK's server and lancedb (as Thoth does) in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_FLOOR], check=True, capture_output=True, text=True)
    cpu, wall = out.stdout.strip().splitlines()[-1].split()
    return float(cpu), float(wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.coldstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="starts per backend (default 5)")
    parser.add_argument("--files", type=int, default=20, help="generated Markdown files in the index")
    parser.add_argument("--backends", default="onnx,torch", help="comma-separated (default onnx,torch)")
    parser.add_argument(
        "--bytecode",
        action="store_true",
        help="compile Thoth's modules first (compileall, as `pip install` does in the image), so that neither the "
        "floor's process nor the server compiles them from source at start (they do where PYTHONDONTWRITEBYTECODE "
        "is set and nothing compiled them)",
    )
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - set(PROVIDERS):
        parser.error(f"--backends takes {', '.join(PROVIDERS)}")
    if args.bytecode:
        compileall.compile_dir(Path(thoth.__file__).parent, quiet=1)  # __pycache__/ beside the sources (gitignored)
        compiled = "loaded from bytecode (compiled first)"
    elif sys.flags.dont_write_bytecode:
        compiled = "compiled from source at each start (PYTHONDONTWRITEBYTECODE)"
    else:
        compiled = "loaded from bytecode once a start wrote it"

    with tempfile.TemporaryDirectory(prefix="thoth-coldstart-") as tmp:
        base = Settings.from_env()
        cache_dir = str(Path(base.cache_dir).expanduser().resolve())
        settings = Settings.from_env(db_uri=str(Path(tmp) / "db"), cache_dir=cache_dir, embed_backend="onnx")
        write_corpus(Path(tmp) / "corpus", args.files)
        summary = Writer(settings).run(str(Path(tmp) / "corpus"), name="handbook")  # exports ONNX if missing
        env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
        env |= {"THOTH_DB_URI": settings.db_uri, "THOTH_CACHE_DIR": cache_dir, "THOTH_LOG_LEVEL": "WARNING"}
        load = os.getloadavg()[0]
        print(
            f"{os.cpu_count()} CPUs, load average {load:.1f} at start; index of {summary.chunks_written} chunks; "
            f"{args.runs} starts per backend, alternating; Thoth's modules {compiled}"
        )
        results: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
        floor, imports = [], []
        for run in range(args.runs):
            floor.append(bare_python())
            imports.append(import_floor())
            for backend in backends if run % 2 == 0 else backends[::-1]:
                query = f"how does {TOPICS[run % len(TOPICS)]} work"
                started = one_start({**env, "THOTH_EMBED_PROVIDER": PROVIDERS[backend]}, free_port(), query)
                results[backend].append(started)
        load_end = os.getloadavg()[0]

    print()
    head = f"{'backend':10}{'/health 200 s':>15}{'first answer s':>16}{'  (min - max)':>16}{'CPU s':>8}{'RSS MB':>9}"
    print(head)
    print("-" * len(head))
    med = {}
    for backend, runs in results.items():
        health = statistics.median(r["health"] for r in runs)
        answer = statistics.median(r["answer"] for r in runs)
        lo, hi = min(r["answer"] for r in runs), max(r["answer"] for r in runs)
        rss = statistics.median(r["rss"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        med[backend] = answer
        med[f"{backend} cpu"] = cpu
        print(f"{backend:10}{health:>15.2f}{answer:>16.2f}{f'({lo:.2f} - {hi:.2f})':>16}{cpu:>8.2f}{rss:>9.0f}")
    print(f"{'python -c pass':10}{'':>15}{statistics.median(floor):>16.2f}")
    floor_cpu = statistics.median(c for c, _ in imports)
    floor_wall = statistics.median(w for _, w in imports)
    print(
        f"{'imports':10}{'':>15}{floor_wall:>16.2f}{'':>16}{floor_cpu:>8.2f}   MCP SDK server + lancedb, nothing else"
    )
    print()
    if "onnx" in med and "torch" in med:
        print(f"first answer, onnx / torch: {med['onnx'] / med['torch']:.2f}x")
    for backend, runs in results.items():
        # Each start against the floor measured in its own round: the machine's speed drifts between rounds
        # (by a third on a shared VM), and a pair sees the same speed where two medians need not.
        over = sorted(r["cpu"] - c for r, (c, _) in zip(runs, imports, strict=True))
        print(
            f"{backend}: CPU over the floor, each start against its round's floor: median "
            f"{statistics.median(over):.2f} s ({over[0]:.2f} - {over[-1]:.2f})"
        )
    if "onnx" in med:
        # issue 17: the first answer within the import floor + 0.5 s, both measured in this run. Wall time
        # on a shared machine waits for cores; the server's CPU seconds against the imports' do not.
        for what, got, floor_s in (("wall", med["onnx"], floor_wall), ("CPU", med["onnx cpu"], floor_cpu)):
            verdict = "met" if got <= floor_s + 0.5 else "NOT met"
            print(
                f"target: first answer within import floor + 0.5 s ({what}): "
                f"{got:.2f} s against {floor_s:.2f} + 0.5 s, {verdict}"
            )
    print(f"load average (1 min): {load:.1f} at start, {load_end:.1f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
