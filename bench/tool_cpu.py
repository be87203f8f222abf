"""CPU a search_handbook call costs in process: this checkout against another one, alternated.

    python -m bench.search --n 1000000 --embed-sample 1000 --db /tmp/thoth-1m   # the table, once
    git worktree add /tmp/base 96981b9                                           # the checkout to compare
    python -m bench.tool_cpu --db /tmp/thoth-1m --against /tmp/base --rounds 4
    python -m bench.tool_cpu --db /tmp/thoth-1m --against /tmp/base --rounds 4 --http   # over HTTP, per thread

Each round runs one process per checkout (this one, then `--against`), in turn, over the same index.
A process builds the server's app and MCP object from that checkout's code (PYTHONPATH), warms its
copies, makes 10 calls unmeasured, then `--calls` search_handbook calls one after the other, the query
cache off: the process CPU per call covers validation, the tool, the store and the result's conversion,
without HTTP. With `--http` each process is that checkout's server (`python -m thoth.mcp.server`,
bench.search.start_server) and the calls go over HTTP one after the other; the server's CPU a call is
given per thread from /proc/PID/task (Python's threads by their names when py-spy is installed, which
reads them; otherwise together as "python"). The queries are the same for every process
(bench.text.queries). The machine is shared and noisy: the ratio of the means over alternated rounds is
what to read, beside the spread.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import httpx

from bench.search import call, checkout_env, start_server, stat_cpu_seconds
from bench.text import queries

# Run by each process, with only the checkout under test on PYTHONPATH: thoth's public entry points that
# every version has (Settings.from_env, Thoth, build_mcp), nothing of this bench's own package.
CHILD = """
import dataclasses, json, logging, sys, time
import anyio
import thoth.app
from thoth.app import Thoth
from thoth.config import Settings
from thoth.mcp.tools import build_mcp

db, asked = sys.argv[1], json.loads(sys.argv[2])
settings = Settings.from_env({"THOTH_DB_URI": db, "THOTH_TOOLSETS": "handbook"})
thoth.app.QUERY_CACHE_SIZE = 0  # every query embedded: the cost measured (a checkout before: its setting)
if hasattr(settings, "query_cache_size"):
    settings = dataclasses.replace(settings, query_cache_size=0)
app = Thoth(settings)
app.warm_up(background=False)
app.store.chunks.warm()
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
    env = checkout_env({**os.environ, "PYTHONPATH": str(checkout)})
    out = subprocess.run(
        [sys.executable, "-c", CHILD, db, json.dumps(asked)], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


def thread_cpu(pid: int, names: dict[str, str]) -> collections.Counter:
    """CPU seconds so far of each thread of `pid`, summed by name (numbered workers together)."""
    seconds: collections.Counter = collections.Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = names.get(task.name) or _unnumbered((task / "comm").read_text().strip())
            seconds[name] += stat_cpu_seconds(task / "stat")
        except OSError:  # the thread ended meanwhile
            continue
    return seconds


def python_thread_names(pid: int) -> dict[str, str]:
    """Thread id -> Python thread name, as `py-spy dump` reads them ({} without py-spy)."""
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy is None:
        return {}
    dump = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True).stdout
    found = re.findall(r'^Thread (\S+) \([^)]*\): "([^"]*)"', dump, flags=re.MULTILINE)
    return {str(int(tid, 0)): _unnumbered(name) for tid, name in found}


def _unnumbered(name: str) -> str:
    """A thread's name without its number: a pool's workers counted together."""
    return re.sub(r"[-_ ]?\d+$", "", name)


def http_cpu_per_call(checkout: Path, db: str, asked: list[str]) -> tuple[float, dict[str, float]]:
    """The server's CPU ms a call over HTTP, in all and per thread."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
    env |= {"PYTHONPATH": str(checkout), "THOTH_DB_URI": db, "THOTH_LOG_LEVEL": "WARNING"}
    server, url = start_server(env)
    try:
        with httpx.Client(timeout=120) as client:
            names = python_thread_names(server.pid)
            before = thread_cpu(server.pid, names)
            for q in asked[10:]:
                call(client, url, q, 5)
            after = thread_cpu(server.pid, names)
    finally:
        server.terminate()
        server.wait()
    per_thread = {name: (after[name] - before.get(name, 0.0)) * 1000 / (len(asked) - 10) for name in after}
    return sum(per_thread.values()), {name: ms for name, ms in per_thread.items() if ms > 0.05}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_cpu")
    parser.add_argument("--db", required=True, help="the index both checkouts read")
    parser.add_argument("--against", required=True, help="the other checkout (a git worktree)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--http", action="store_true", help="each checkout's server over HTTP, CPU per thread")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    asked = queries(args.calls + 10, seed=11)
    runs: dict[str, list[float]] = {"this": [], "against": []}
    threads: dict[str, collections.defaultdict[str, list[float]]] = {n: collections.defaultdict(list) for n in runs}
    for _ in range(args.rounds):
        for name, checkout in (("this", here), ("against", Path(args.against))):
            if not args.http:
                runs[name].append(cpu_per_call(checkout, args.db, asked))
                continue
            total, per_thread = http_cpu_per_call(checkout, args.db, asked)
            runs[name].append(total)
            for thread, ms in per_thread.items():
                threads[name][thread].append(ms)
    means = {name: statistics.mean(values) for name, values in runs.items()}
    print(f"load {os.getloadavg()[0]:.1f} after {args.rounds} rounds of {args.calls} calls")
    for name, values in runs.items():
        print(f"{name:8} CPU a call {min(values):.1f}-{max(values):.1f} ms (mean {means[name]:.1f})")
    print(f"this / against: {means['this'] / means['against']:.2f}")
    for name, by_thread in threads.items():
        ranked = sorted(by_thread.items(), key=lambda item: -statistics.mean(item[1]))
        print(f"{name:8} per thread: " + ", ".join(f"{t} {statistics.mean(ms):.1f}" for t, ms in ranked))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
