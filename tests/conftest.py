"""Shared fixtures: a small corpus written by the tests, one real index per session, a real server.

Everything is real: LanceDB in temporary folders, the bundled all-MiniLM-L6-v2
model, uvicorn serving the app on a free loopback port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from examples.pdfgen import write_text_pdf
from ingest.pipeline import Ingestor
from thoth.config import Settings
from thoth.mcp.server import create_app

REPO_ROOT = Path(__file__).resolve().parent.parent

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


@pytest.fixture(scope="session")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """An index of the test corpus, built once per session. Tests must not write to it."""
    root = write_corpus(tmp_path_factory.mktemp("corpus"))
    settings = make_settings(tmp_path_factory.mktemp("db") / "lancedb")
    summary = Ingestor(settings).run(str(root), name="handbook")
    assert not summary.failed, summary.render()
    return settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        return httpx.post(f"{self.url}/mcp", json=body, headers=headers or {}, timeout=60)


@pytest.fixture(scope="session")
def server(indexed: Settings) -> Iterator[LiveServer]:
    with LiveServer(indexed) as live:
        yield live
