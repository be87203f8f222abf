"""Chat sessions: a titled conversation over one dataset, persisted in the `sessions` table."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from thoth.retrieval.tree import get_dataset
from thoth.store import Store


def create_session(store: Store, dataset_id: str, title: str) -> dict:
    """A new session over an existing dataset; returns its row."""
    get_dataset(store, dataset_id)
    row = {
        "session_id": f"sess_{uuid.uuid4().hex}",
        "source_id": dataset_id,
        "title": title.strip(),
        "created_at": datetime.now(UTC),
    }
    store.add_session(row)
    return row
