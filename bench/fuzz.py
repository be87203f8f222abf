"""Fuzz every tool over HTTP, as its schema describes it, and count what should never happen.

```bash
python -m bench.fuzz --calls 5000            # --seed 7; --db PATH keeps the index between runs
```

It indexes examples/handbook and the caching-fundamentals workshop (tests/fixtures), starts
`python -m thoth.mcp.server` with roles on (a reader and a writer token), reads `tools/list`, and calls
tools with arguments drawn from each input schema: values inside the bounds, at them and just past
them, wrong types, missing and unknown arguments, hostile text (bench/hostile.py), NUL
characters, long strings, huge numbers, real ids from the index. Each answer and the server's log
are checked for:

- faults: HTTP 500, JSON-RPC -32603, a tool error in the server-fault shape (`… failed: …; correlation id`);
- paths: a path on the server's disk (the index's, the corpus's, the checkout's) in an answer;
- tracebacks: `Traceback` in an answer, or an ERROR line or a traceback in the server's log.

It prints the calls by kind of answer and every finding; exit status 1 if there is any.
tests/test_fuzz.py runs a few hundred of the same calls (seeded) in `make test`, and walks every
tool's bounds (`bounds`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from bench.hostile import HOSTILE_QUERIES

REPO_ROOT = Path(__file__).resolve().parent.parent
READER = "fuzz-reader-token-0123456789"
WRITER = "fuzz-writer-token-0123456789"
SERVER_FAULT = re.compile(r"failed: .*; correlation id ")
NOT_FOUND = re.compile(r"\b(unknown|no |not indexed|does not exist|is not in|matches no|has no|belongs to no)", re.I)
# A state refusal, not the value's: a source's run is already under way (the fuzz adds one source often)
BUSY = re.compile(r"a run of '[^']*' is already (queued|running)")
ODD_STRINGS = ("", " ", "\x00", "a\x00b", "../../etc/passwd", "%00", "😀" * 3, "\u202e", "x" * 5000, "null")
ODD_NUMBERS = (0, -1, 2**31, -(2**31) - 1, 2**63, 10**30, 1.5, -0.0)


# -- the index and the server (the bench; tests/test_fuzz.py builds its own) ---------------------------


def build_index(db: Path) -> None:
    from thoth.config import Settings
    from thoth.writes.writer import Writer

    settings = Settings.from_env({}, db_uri=str(db))
    for root, name in [(REPO_ROOT / "examples" / "handbook", "handbook"), (workshop_root(), None)]:
        summary = Writer(settings).run(str(root), name=name)
        assert not summary.failed, summary.render()


def workshop_root() -> Path:
    return REPO_ROOT / "tests" / "fixtures" / "workshops" / "caching-fundamentals"


# -- values from a schema ------------------------------------------------------------------------------


def resolve(schema: dict, defs: dict) -> dict:
    """`schema` with a $ref followed and an optional (anyOf with null) unwrapped to its other type."""
    if "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    options = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    if options:
        return resolve(options[0], defs)
    return schema


def valid(schema: dict, defs: dict, rng: random.Random, ids: list[str]) -> Any:
    """A value the schema accepts (not always one the index holds)."""
    schema = resolve(schema, defs)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 101) - 1)
        return rng.randint(lo, hi)
    if kind == "number":
        lo, hi = schema.get("minimum", 0.0), schema.get("maximum", 1.0)
        return rng.uniform(lo, hi)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        count = rng.randint(schema.get("minItems", 0), min(schema.get("maxItems", 3), 3))
        return [valid(schema.get("items", {}), defs, rng, ids) for _ in range(count)]
    if kind == "object":
        return {}
    lo, hi = schema.get("minLength", 1), schema.get("maxLength", 80)
    text = rng.choice([*ids, *HOSTILE_QUERIES, "time off", "cache", "handbook", "deploy"]) if ids else "time off"
    text = text[:hi]
    return text + "x" * max(0, lo - len(text))


def wild(schema: dict, defs: dict, rng: random.Random, ids: list[str]) -> Any:
    """Any value: valid, at or past a bound, of another type, hostile."""
    roll = rng.random()
    if roll < 0.45:
        return valid(schema, defs, rng, ids)
    if roll < 0.65:
        found = [value for value, _ in bounds(schema, defs)]
        if found:
            return rng.choice(found)
    if roll < 0.8:
        return rng.choice([*ODD_STRINGS, *HOSTILE_QUERIES])
    if roll < 0.9:
        return rng.choice(ODD_NUMBERS)
    return rng.choice([None, True, [], {}, ["a", 1], {"step_number": 2**31}, {"type": "a\x00"}, {"x": "y"}])


def bounds(schema: dict, defs: dict, sample: Any = None) -> list[tuple[Any, bool]]:
    """(value, whether the schema accepts it) at each bound of `schema`: the minimum, the maximum and just
    past each. `sample` is a valid item for arrays (the items themselves are not the bound)."""
    schema = resolve(schema, defs)
    kind = schema.get("type")
    found: list[tuple[Any, bool]] = []
    if kind in ("integer", "number"):
        step = 1 if kind == "integer" else 0.001
        if "minimum" in schema:
            found += [(schema["minimum"], True), (schema["minimum"] - step, False)]
        if "exclusiveMinimum" in schema:
            found += [(schema["exclusiveMinimum"], False), (schema["exclusiveMinimum"] + step, True)]
        if "maximum" in schema:
            found += [(schema["maximum"], True), (schema["maximum"] + step, False)]
        if "exclusiveMaximum" in schema:
            found += [(schema["exclusiveMaximum"], False), (schema["exclusiveMaximum"] - step, True)]
    elif kind == "string":
        if schema.get("minLength", 0) > 0:
            found += [("q" * schema["minLength"], True), ("q" * (schema["minLength"] - 1), False)]
        if "maxLength" in schema:
            found += [("q" * schema["maxLength"], True), ("q" * (schema["maxLength"] + 1), False)]
    elif kind == "array":
        item = sample if sample is not None else "q"
        if schema.get("minItems", 0) > 0:
            found += [([item] * schema["minItems"], True), ([item] * (schema["minItems"] - 1), False)]
        if "maxItems" in schema:
            found += [([item] * schema["maxItems"], True), ([item] * (schema["maxItems"] + 1), False)]
    return found


# -- calls and what their answers say -----------------------------------------------------------------


@dataclass
class Answer:
    status: int
    body: Any
    text: str  # the raw response, for the path and traceback checks

    @property
    def result(self) -> dict:
        return self.body.get("result", {}) if isinstance(self.body, dict) else {}

    @property
    def error_code(self) -> int | None:
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error.get("code") if isinstance(error, dict) else None

    @property
    def message(self) -> str:
        content = self.result.get("content") or [{}]
        return str(content[0].get("text", "")) if isinstance(content[0], dict) else ""

    @property
    def refused(self) -> bool:
        return bool(self.result.get("isError")) or self.error_code is not None

    def kind(self) -> str:
        if self.status != 200:
            return f"HTTP {self.status}"
        if self.error_code is not None:
            return f"JSON-RPC {self.error_code}"
        return "tool error" if self.result.get("isError") else "ok"

    def fault(self) -> bool:
        return self.status >= 500 or self.error_code == -32603 or bool(SERVER_FAULT.search(self.message))

    def served(self) -> bool:
        """Answered, looked up and not found, or busy: not refused for the value itself."""
        return not self.refused or (
            not self.message.startswith("invalid arguments")
            and bool(NOT_FOUND.search(self.message) or BUSY.search(self.message))
        )


def tool_call(client: httpx.Client, url: str, name: str, arguments: Any, token: str) -> Answer:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = client.post(f"{url}/mcp", json=body, headers={"Authorization": f"Bearer {token}"})
    try:
        parsed = response.json()
    except ValueError:
        parsed = None
    return Answer(response.status_code, parsed, response.text)


def list_tools(client: httpx.Client, url: str) -> list[dict]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = client.post(f"{url}/mcp", json=body, headers={"Authorization": f"Bearer {WRITER}"})
    return response.json()["result"]["tools"]


def find_values(value: Any, key: str) -> Iterator[Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                yield v
            yield from find_values(v, key)
    elif isinstance(value, list):
        for item in value:
            yield from find_values(item, key)


def base_arguments(client: httpx.Client, url: str) -> dict[str, dict]:
    """Arguments each tool serves on the bench's index: real ids found through the tools themselves."""
    hit = tool_call(client, url, "search", {"query": "time off", "top_k": 1}, READER).result["structuredContent"]
    chunk, key = hit["hits"][0]["id"], hit["hits"][0]["key"]
    path = tool_call(client, url, "rag_path_to_root", {"node_id": chunk}, READER).result["structuredContent"]
    node = [n for n in find_values(path, "node_id") if n != chunk][-1]
    pages = tool_call(client, url, "qurio_list_pages", {"source_id": "handbook", "limit": 1}, READER)
    page = pages.result["structuredContent"]["pages"][0]["url"]
    workshop = {"workshop": "caching-fundamentals", "exerciseNumber": 1, "stepNumber": 1}
    # a figure, where the index has one (a paper with a captioned plot); else a chunk (a refusal it names)
    figures = tool_call(client, url, "search", {"query": "figure", "content_type": "figure", "top_k": 1}, READER)
    found = (figures.result.get("structuredContent") or {}).get("hits") or []
    figure = found[0]["id"] if found else chunk
    on_handbook = {"dataset_id": "handbook", "query": "time off"}
    site = {"uri": "https://docs.example.invalid/guide/", "name": "fuzz-site"}  # a run that cannot reach its host
    run = tool_call(client, url, "add_source", site, WRITER).result.get("structuredContent") or {}
    run_id = run.get("run_id", "no-run")
    return {
        "search_handbook": {"query": "time off"},
        "list_topics": {},
        "get_recent_updates": {"days": 30},
        "qurio_search": {"query": "deploy"},
        "qurio_list_sources": {},
        "qurio_list_pages": {"source_id": "handbook"},
        "qurio_read_page": {"url": page},
        "list_workshops": {},
        "retrieve_learning_context": workshop,
        "retrieve_diff_context": workshop,
        "search_topic_context": {"query": "cache key", "workshop": "caching-fundamentals"},
        "retrieve_quiz_instructions": {"topic": "HTTP caching"},
        "ping": {},
        "list_collections": {},
        "set_default_collection": {"name": "handbook"},
        "list_collection_files": {"collection": "handbook"},
        "search": {"query": "time off"},
        "fetch": {"id": chunk},
        "resolve_citation": {"source_ref": f"doc://handbook/{key}"},
        "fetch_document_chunks": {"bucket": "handbook", "key": key},
        "fetch_chunk_document": {"id": chunk},
        "fetch_chunk_partition": {"id": chunk},
        "fetch_chunk_bibtex": {"id": chunk},
        "get_figure": {"id": figure},
        "list_datasets": {},
        "create_chat_session": {"dataset_id": "handbook"},
        "ingest_document": {"dataset_id": "fuzz-notes", "file_content": "Fuzzing notes: every door is checked."},
        "answer_question": on_handbook,
        "retrieve_documents": on_handbook,
        "rag_retrieve": on_handbook,
        "rag_node_get": {"node_id": chunk},
        "rag_node_children": {"node_id": node},
        "rag_node_navigation": {"node_id": chunk, "direction": "parent"},
        "rag_path_to_root": {"node_id": chunk},
        "rag_summarize": {"node_ids": [chunk]},
        "list_tools": {},
        "add_source": site,
        "refresh_source": {"source": "fuzz-site"},
        "remove_source": {"source": "fuzz-notes"},
        "list_runs": {},
        "get_run": {"run_id": run_id},
        "cancel_run": {"run_id": run_id},
    }


@dataclass
class Tally:
    """What the calls got, and what they should never have got."""

    private: tuple[str, ...]  # paths on the server's disk that no answer may name
    kinds: Counter[str] = field(default_factory=Counter)
    faults: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(self.kinds.values())

    def add(self, name: str, arguments: Any, answer: Answer) -> None:
        self.kinds[answer.kind()] += 1
        where = f"{name} {json.dumps(arguments)[:200]} -> {answer.text[:300]}"
        if answer.fault():
            self.faults.append(where)
        if any(path in answer.text for path in self.private):
            self.paths.append(where)
        if "Traceback" in answer.text:
            self.tracebacks.append(where)

    def add_log(self, lines: list[str]) -> None:
        """Server log lines: an ERROR or a traceback is a finding."""
        self.tracebacks += [line[:300] for line in lines if "Traceback" in line or " ERROR " in line]

    def findings(self) -> int:
        return len(self.faults) + len(self.paths) + len(self.tracebacks)

    def report(self) -> str:
        kinds = ", ".join(f"{kind} {count}" for kind, count in self.kinds.most_common())
        lines = [
            f"calls {self.calls}: {kinds}",
            f"server faults {len(self.faults)}, server paths {len(self.paths)}, tracebacks {len(self.tracebacks)}",
        ]
        for label, found in (("fault", self.faults), ("path", self.paths), ("traceback", self.tracebacks)):
            lines += [f"  {label}: {item}" for item in found[:10]]
        return "\n".join(lines)


def fuzz(url: str, calls: int, seed: int, private: tuple[str, ...]) -> Tally:
    """`calls` tool calls with arguments drawn from each tool's schema, a reader's or a writer's."""
    rng = random.Random(seed)
    tally = Tally(private)
    with httpx.Client(timeout=120) as client:
        tools = list_tools(client, url)
        base = base_arguments(client, url)
        ids = sorted({str(v) for args in base.values() for v in args.values() if isinstance(v, str)})
        for _ in range(calls):
            tool = rng.choice(tools)
            schema = tool["inputSchema"]
            defs = schema.get("$defs", {})
            properties = schema.get("properties", {})
            arguments: dict[str, Any] = dict(base.get(tool["name"], {})) if rng.random() < 0.5 else {}
            for name, prop in properties.items():
                if name in schema.get("required", []) and name not in arguments or rng.random() < 0.4:
                    arguments[name] = wild(prop, defs, rng, ids)
            if rng.random() < 0.05:
                arguments[rng.choice(["unknown", "__proto__", "a\x00"])] = rng.choice(ODD_STRINGS)
            if rng.random() < 0.05 and arguments:
                del arguments[rng.choice(sorted(arguments))]
            sent: Any = arguments if rng.random() > 0.02 else rng.choice([[], "x", 1, None])
            token = WRITER if rng.random() < 0.3 else READER
            tally.add(tool["name"], sent, tool_call(client, url, tool["name"], sent, token))
    return tally


def start_server(env: dict[str, str], log: IO[str]) -> tuple[subprocess.Popen, str]:
    """`python -m thoth.mcp.server` on a free port, its log into `log`, once its model is ready."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "thoth.mcp.server"]
    server = subprocess.Popen(command, env={**env, "PORT": str(port)}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=5).json().get("embedder") == "ready":
                return server, url
        except (httpx.HTTPError, ValueError):
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise RuntimeError("the server did not become ready")
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="tool calls to make")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", help="index folder (built when missing; a temporary one by default)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="thoth-fuzz-") as tmp:
        db = Path(args.db or Path(tmp) / "lancedb").resolve()
        if not db.exists():
            build_index(db)
        log = Path(tmp) / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
        env |= {
            "THOTH_DB_URI": str(db),
            "THOTH_AUTH": "tokens",
            "THOTH_AUTH_TOKENS": READER,
            "THOTH_AUTH_WRITER_TOKENS": WRITER,
            "THOTH_LOG_LEVEL": "INFO",
            "THOTH_PORTAL_BASE_URL": "https://portal.example.com",  # resolve_citation without file access
        }
        with log.open("w") as out:
            server, url = start_server(env, out)
            try:
                private = (str(db), str(REPO_ROOT), str(Path(tmp)))
                tally = fuzz(url, args.calls, args.seed, private)
            finally:
                server.terminate()
                server.wait(timeout=30)
        tally.add_log(log.read_text().splitlines())
    print(tally.report())
    return 1 if tally.findings() else 0


if __name__ == "__main__":
    sys.exit(main())
