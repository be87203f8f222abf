"""Peak memory of the server per write: one `ingest_document` of each size, then two at once.

    python -m bench.write_memory [--pages 20] [--sizes 2000,100000,2097152] [--both BYTES] [--wait S]
                                 [--tree] [--db PATH]

A real server (`python -m thoth.mcp.server`, the real model) over `--pages` generated pages, warmed
by searches: its idle RSS. Then, one after another, an `ingest_document` of each size (generated text;
a new document each): the server's peak RSS during the write (the kernel's high-water mark, reset
before each write through /proc/PID/clear_refs), and its RSS once the write answered. Then two writes
of the largest size (or `--both`) at once: the write gate runs one, the other waits up to `--wait` seconds
(thoth.writes.gate.WRITE_WAIT_SECONDS) and is then answered "busy, retry later"; each one's answer is printed.
Trees are off unless `--tree` (bench.tree measures the tree's share).
Printed as one JSON object, MB above the idle server.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.ingest import write_corpus
from bench.search import rss_mb, start_server
from bench.text import TOPICS, passage
from thoth.config import Settings
from thoth.writes.writer import Writer


def text_of(size: int, seed: int) -> str:
    """About `size` bytes of generated prose in paragraphs under headings."""
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        topic = TOPICS[rng.randrange(len(TOPICS))]
        part = f"## {topic.title()} {len(parts)}\n\n{passage(rng, topic, 8)}\n\n"
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM back to the current RSS (Linux >= 4.0)


def write(client: httpx.Client, url: str, content: str, key: str) -> float:
    """Seconds until `ingest_document` answered; a tool error raises."""
    seconds, error = answer(client, url, content, key)
    if error:
        raise RuntimeError(f"ingest_document failed: {error}")
    return seconds


def answer(client: httpx.Client, url: str, content: str, key: str) -> tuple[float, str]:
    """(seconds until `ingest_document` answered, its tool error's text or '')."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "ingest_document",
            "arguments": {"dataset_id": "notes", "file_content": content, "source": key},
        },
    }
    started = time.perf_counter()
    response = client.post(f"{url}/mcp", json=body)
    response.raise_for_status()  # never a 500: a refused write is a tool error
    result = response.json()["result"]
    error = result["content"][0]["text"] if result.get("isError") else ""
    return time.perf_counter() - started, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.write_memory")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--sizes", default="2000,100000,2097152", help="bytes per write, comma-separated")
    parser.add_argument("--both", type=int, help="bytes of each of the two writes at once (default: the largest size)")
    parser.add_argument("--wait", type=float, default=600, help="the server's WRITE_WAIT_SECONDS")
    parser.add_argument("--tree", action="store_true", help="trees on (THOTH_TREES=extractive)")
    parser.add_argument("--db", help="folder for the corpus and index (default: a temporary one)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(args.db or tempfile.mkdtemp(prefix="thoth-write-memory-"))
    write_corpus(root / "pages", args.pages)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("THOTH_")},
        **{k: v for k, v in os.environ.items() if k.startswith("THOTH_") and k != "THOTH_DB_URI"},
        "THOTH_DB_URI": str(root / "index"),
        "THOTH_TREES": "extractive" if args.tree else "off",
        "THOTH_LOG_LEVEL": "WARNING",
    }
    Writer(Settings.from_env(env)).run(str(root / "pages"), name="handbook")
    patches = {
        "thoth.writes.gate.WRITE_WAIT_SECONDS": args.wait,  # the second concurrent write waits, then Busy
        "thoth.writes.gate.MAINTAIN_AFTER_WRITES": 10**9,  # maintenance measured on its own (bench.writes)
    }
    server, url = start_server(env, patches=patches)
    result: dict[str, object] = {"sizes": {}}
    try:
        with httpx.Client(timeout=3600) as client:
            write(client, url, text_of(500, 0), "warm.md")  # the first write loads what every write needs
            time.sleep(1)
            idle = rss_mb(server.pid)["rss"]
            result["idle_mb"] = round(idle)
            for n, size in enumerate(sizes, start=1):
                reset_peak(server.pid)
                seconds = write(client, url, text_of(size, n), f"doc-{n}.md")
                memory = rss_mb(server.pid)
                result["sizes"][str(size)] = {  # type: ignore[index]
                    "seconds": round(seconds, 1),
                    "peak_above_idle_mb": round(memory["peak"] - idle),
                    "after_above_idle_mb": round(memory["rss"] - idle),
                }
            reset_peak(server.pid)
            largest = args.both or max(sizes)
            answers: dict[int, tuple[float, str]] = {}

            def one(i: int) -> None:
                answers[i] = answer(client, url, text_of(largest, 100 + i), f"both-{i}.md")

            threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            memory = rss_mb(server.pid)
            result["two_at_once"] = {
                "size": largest,
                "seconds": round(time.perf_counter() - started, 1),
                "peak_above_idle_mb": round(memory["peak"] - idle),
                "after_above_idle_mb": round(memory["rss"] - idle),
                "answers": [{"seconds": round(sec, 1), "error": error} for sec, error in answers.values()],
            }
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
