"""The server's write gate over a real server and index: a write that cannot get the slot is a tool error
that says to retry (never a 500), enough writes start maintenance in the background, and /health shows
each table's versions, files, unindexed rows and last maintenance."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import LOOPBACK, LiveServer, make_settings
from thoth.app import Thoth
from thoth.mcp.server import create_app
from thoth.store import Store
from thoth.writes.gate import ABANDON_MARGIN_SECONDS, Busy, ShuttingDown, WriteGate


def ingest(live: LiveServer, n: int) -> dict:
    text = f"Note {n}: the ferry carries {n} bicycles."
    arguments = {"dataset_id": "notes", "file_content": text, "source": f"{n}.md"}
    response = live.rpc("tools/call", {"name": "ingest_document", "arguments": arguments})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_busy_writes_are_refused_and_enough_writes_maintain_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("thoth.writes.gate.MAINTAIN_AFTER_WRITES", 4)
    monkeypatch.setattr("thoth.writes.gate.WRITE_WAIT_SECONDS", 0.2)
    settings = replace(make_settings(tmp_path / "db"), tree_build=False)
    thoth = Thoth(settings)
    with LiveServer(settings, create_app(settings, app=thoth)) as live:
        assert not ingest(live, 1)["isError"]
        with thoth.writes.hold():  # another write holds the instance's slot (the second write counted)
            busy = ingest(live, 2)
        assert busy["isError"] and "busy" in busy["content"][0]["text"] and "retry" in busy["content"][0]["text"]
        assert not ingest(live, 2)["isError"]
        assert not ingest(live, 3)["isError"]  # the fourth: maintenance starts in the background
        maintenance = thoth.writes.maintenance
        assert maintenance is not None
        maintenance.join(timeout=120)
        deadline = time.monotonic() + 10
        while True:
            health = LOOPBACK.get(f"{live.url}/health").json()
            if "last_maintained" in health["table_health"]["chunks"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        chunks = health["table_health"]["chunks"]
        assert chunks["last_maintained"] and chunks["versions"] >= 1 and chunks["files"] >= 1
        assert chunks["unindexed_rows"] == 0  # maintenance folded the written notes into the BM25 index
        assert set(health["table_health"]) >= {"chunks", "documents", "sources", "settings"}


def test_after_close_no_write_starts_and_a_waiting_one_is_refused(tmp_path: Path) -> None:
    gate = WriteGate(Store(make_settings(tmp_path / "db")))
    refused: list[Exception] = []

    def waiting() -> None:
        try:
            with gate.hold(wait=True):
                pass
        except ShuttingDown as exc:
            refused.append(exc)

    with gate.hold():
        waiter = threading.Thread(target=waiting)
        waiter.start()
        gate.close(grace=ABANDON_MARGIN_SECONDS + 0.2)
        waiter.join(timeout=5)  # it waited for the slot and is told at once, not after the wait
        assert len(refused) == 1 and "retry" in str(refused[0])
        assert not gate.abandon.is_set()  # the write in flight still has its time to finish
        time.sleep(0.5)
        assert gate.abandon.is_set()  # then it stops before writing anything
    with pytest.raises(ShuttingDown):
        with gate.hold():
            pass


def test_no_wait_takes_a_free_slot_and_refuses_a_held_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thoth.writes.gate.WRITE_WAIT_SECONDS", 0)
    gate = WriteGate(Store(make_settings(tmp_path / "db")))
    with gate.hold():  # free: taken at once
        with pytest.raises(Busy, match="busy with another write"):
            with gate.hold():
                pass
