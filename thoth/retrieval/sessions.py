"""Chat sessions: a titled conversation over one dataset, persisted in the `sessions` table.

A session belongs to the caller that created it (`owner`, the verified caller's key): another
caller can neither read nor continue it, and is told only that no such session exists.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from thoth.errors import NotFound
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


def get_session(store: Store, session_id: str, owner: str) -> Session:
    """`owner`'s session with this id; another caller's session is reported as missing, not as forbidden
    (which would confirm that the id exists)."""
    session = store.first(Session, {"session_id": session_id})
    if session is None or session.owner != owner:
        raise NotFound(f"no chat session {session_id[:64]!r} of yours")
    return session
