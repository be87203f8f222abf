"""Chat sessions: a titled conversation over one dataset, persisted in the `sessions` table.

A session belongs to the caller that created it (`owner`, the verified caller's key): another
caller can neither read nor continue it, and is told only that no such session exists.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from thoth.retrieval.errors import NotFound
from thoth.retrieval.tree import get_dataset
from thoth.store import Store


def create_session(store: Store, dataset_id: str, title: str, owner: str) -> dict:
    """A new session over an existing dataset, owned by `owner`; returns its row."""
    get_dataset(store, dataset_id)
    row = {
        "session_id": f"sess_{uuid.uuid4().hex}",
        "source_id": dataset_id,
        "title": title.strip(),
        "created_at": datetime.now(UTC),
        "owner": owner,
    }
    store.add_session(row)
    return row


def get_session(store: Store, session_id: str, owner: str) -> dict:
    """`owner`'s session with this id; another caller's session is reported as missing, not as forbidden
    (which would confirm that the id exists)."""
    row = store.get_session(session_id)
    if row is None or row.get("owner") != owner:
        raise NotFound(f"no chat session {session_id[:64]!r} of yours; create one with create_chat_session")
    return row
