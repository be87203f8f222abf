"""Chat sessions: a titled conversation over one dataset, persisted in the `sessions` table.

A session records the caller that created it (`owner`, the verified caller's key), so that reading
one back can be limited to its owner; no tool reads sessions back yet.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from thoth.records import Session
from thoth.retrieval.tree import get_dataset
from thoth.store import Store


def create_session(store: Store, source_id: str, title: str, owner: str) -> Session:
    """A new session over an existing source (a dataset), owned by `owner`; stored and returned."""
    get_dataset(store, source_id)
    session = Session(
        session_id=f"sess_{uuid.uuid4().hex}",
        source_id=source_id,
        title=title.strip(),
        created_at=datetime.now(UTC),
        owner=owner,
    )
    store.put(session)
    return session
