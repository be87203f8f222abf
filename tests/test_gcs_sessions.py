"""Two databases in one bucket, opened by one process (bench.writes' maintained and fresh indexes): each
one's tables lie under its own prefix, where a new process looks for them."""

from __future__ import annotations

from tests.conftest import GcsEmulator
from thoth.config import Settings
from thoth.gcs import storage_client
from thoth.records import Chunk
from thoth.store import Store

BUCKET = "two-databases"


def test_two_databases_in_one_bucket_keep_to_their_own_prefixes(gcs_emulator: GcsEmulator) -> None:
    settings = {
        name: Settings.from_env({"STORAGE_EMULATOR_HOST": gcs_emulator.host, "THOTH_DB_URI": f"gs://{BUCKET}/{name}"})
        for name in ("first", "second")
    }
    storage_client(settings["first"]).create_bucket(BUCKET)
    for name in ("first", "second"):  # one process, one after the other, as bench.writes does
        store = Store(settings[name])
        store.ensure_tables(8)
        assert store.has(Chunk)
    names = [blob.name for blob in storage_client(settings["first"]).list_blobs(BUCKET)]
    for name, other in (("first", "second"), ("second", "first")):
        assert any(n.startswith(f"{name}/") and "/chunks.lance/" in n for n in names), names
        # never under the other's prefix (a shared session handed the second the first one's object store)
        assert not any(n.startswith(f"{other}/{name}/") for n in names), names
