"""scripts/smoke.sh against a real server: passes on a good deployment, fails loudly on a wrong answer."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import LiveServer, make_settings
from thoth.config import Settings

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "smoke.sh"
TOKEN = "smoke-test-token-0123456789abcdef"


def smoke(url: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("THOTH_", "SMOKE_"))}
    return subprocess.run(
        ["bash", str(SCRIPT), url],
        env={**base, "SMOKE_GCLOUD": "0", **env},  # this machine has gcloud but no login
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def token_server(indexed: Settings) -> Iterator[LiveServer]:
    with LiveServer(replace(indexed, auth_mode="tokens", auth_tokens=(TOKEN,))) as live:
        yield live


def test_smoke_passes_with_a_token(token_server: LiveServer) -> None:
    run = smoke(token_server.url, THOTH_TOKEN=TOKEN, SMOKE_EXPECT="people/time-off.md")
    assert run.returncode == 0, run.stdout + run.stderr
    for step in ("health", "initialize", "tools/list", "search_handbook", "unauthenticated request refused (401)"):
        assert f"ok   {step}" in run.stdout
    assert "smoke test passed" in run.stdout
    assert TOKEN not in run.stdout + run.stderr


def test_smoke_fails_loudly(token_server: LiveServer, tmp_path: Path) -> None:
    wrong = smoke(token_server.url, THOTH_TOKEN="not-the-token-0123456789")
    assert wrong.returncode == 1
    assert "SMOKE FAILED: initialize: HTTP 401" in wrong.stderr  # /health is open, /mcp is not

    expect = smoke(token_server.url, THOTH_TOKEN=TOKEN, SMOKE_EXPECT="no/such/page.md")
    assert expect.returncode == 1 and "search_handbook finds no/such/page.md: unexpected answer" in expect.stderr

    with LiveServer(make_settings(tmp_path / "empty")) as empty:  # an empty index is not a working deployment
        run = smoke(empty.url)
        assert run.returncode == 1 and "SMOKE FAILED: health: HTTP 503" in run.stderr

    assert smoke("").returncode == 2


def test_smoke_against_an_open_server_notices_nothing_is_refused(indexed: Settings) -> None:
    with LiveServer(indexed) as open_server:  # THOTH_AUTH=off
        assert smoke(open_server.url).returncode == 0  # no credentials: nothing to leave out
        run = smoke(open_server.url, THOTH_TOKEN=TOKEN)
        assert run.returncode == 1 and "the service is open to anyone" in run.stderr
