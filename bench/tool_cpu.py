"""CPU a search_handbook call costs in process: this checkout against another one, alternated.

    python -m bench.search --n 1000000 --embed-sample 1000 --db /tmp/thoth-1m   # the table, once
    git worktree add /tmp/base 96981b9                                           # the checkout to compare
    python -m bench.tool_cpu --db /tmp/thoth-1m --against /tmp/base --rounds 4

Each round runs one process per checkout (this one, then `--against`), in turn, over the same index.
A process builds the server's app and MCP object from that checkout's code (PYTHONPATH), warms its
copies, makes 10 calls unmeasured, then `--calls` search_handbook calls one after the other, the query
cache off: the process CPU per call covers validation, the tool, the store and the result's conversion,
without HTTP. The queries are the same for every process (bench.text.queries). The machine is shared
and noisy: the ratio of the means over alternated rounds is what to read, beside the spread.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench.text import queries

# Run by each process, with only the checkout under test on PYTHONPATH: thoth's public entry points that
# every version has (Settings.from_env, Thoth, build_mcp), nothing of this bench's own package.
CHILD = """
import json, logging, sys, time
import anyio
from thoth.app import Thoth
from thoth.config import Settings
from thoth.mcp.tools import build_mcp

db, asked = sys.argv[1], json.loads(sys.argv[2])
app = Thoth(Settings.from_env({"THOTH_DB_URI": db, "THOTH_QUERY_CACHE_SIZE": "0", "THOTH_TOOLSETS": "handbook"}))
app.warm_up(background=False)
app.store.warm_copies()
mcp = build_mcp(app)
logging.getLogger("thoth").setLevel(logging.WARNING)

async def calls():
    for q in asked[:10]:
        await mcp.call_tool("search_handbook", {"query": q, "num_results": 5})
    started = time.process_time()
    for q in asked[10:]:
        await mcp.call_tool("search_handbook", {"query": q, "num_results": 5})
    print((time.process_time() - started) * 1000 / (len(asked) - 10))

anyio.run(calls)
"""


def cpu_per_call(checkout: Path, db: str, asked: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, db, json.dumps(asked)], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_cpu")
    parser.add_argument("--db", required=True, help="the index both checkouts read")
    parser.add_argument("--against", required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    asked = queries(args.calls + 10, seed=11)
    runs: dict[str, list[float]] = {"this": [], "against": []}
    for _ in range(args.rounds):
        runs["this"].append(cpu_per_call(here, args.db, asked))
        runs["against"].append(cpu_per_call(Path(args.against), args.db, asked))
    means = {name: statistics.mean(values) for name, values in runs.items()}
    print(f"load {os.getloadavg()[0]:.1f} after {args.rounds} rounds of {args.calls} calls")
    for name, values in runs.items():
        print(f"{name:8} CPU a call {min(values):.1f}-{max(values):.1f} ms (mean {means[name]:.1f})")
    print(f"this / against: {means['this'] / means['against']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
