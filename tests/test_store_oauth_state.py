"""thoth.store.oauth_state: what instances agree on during sign-in, raced by two stores over one index folder
(two Cloud Run instances): a code is redeemed once, a refresh-token generation advances once, a revocation is
seen by the other store."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from thoth.config import Settings
from thoth.store.db import Store


def stores(folder: Path) -> tuple[Store, Store]:
    settings = Settings.from_env({}, db_uri=str(folder / "lancedb"), read_consistency_seconds=5.0)
    return Store(settings), Store(settings)


def race(calls: list) -> list:
    with ThreadPoolExecutor(len(calls)) as pool:
        return [f.result() for f in [pool.submit(call) for call in calls]]


def test_a_code_is_claimed_once_across_instances(tmp_path: Path) -> None:
    one, two = stores(tmp_path)
    later = time.time() + 60
    one.oauth_state.claim("code:warm", later)  # both open the table before the race
    two.oauth_state.claim("code:warm2", later)
    claimed = race([lambda s=s: s.oauth_state.claim("code:raced", later) for s in (one, two) * 3])
    assert claimed.count(True) == 1


def test_a_generation_advances_once_and_a_replay_revokes_the_family(tmp_path: Path) -> None:
    one, two = stores(tmp_path)
    later = time.time() + 60
    one.oauth_state.start("family:f", later)
    assert two.oauth_state.live("family:f")  # started on the other instance: read at once, not in 5 s
    advanced = race([lambda s=s: s.oauth_state.advance("family:f", 0, later) for s in (one, two)])
    assert advanced.count(True) == 1  # the loser presented generation 0 again: that revokes the family
    assert not one.oauth_state.live("family:f")
    assert not one.oauth_state.advance("family:f", 1, later)


def test_expired_rows_are_pruned_when_a_family_starts(tmp_path: Path) -> None:
    one, _ = stores(tmp_path)
    one.oauth_state.claim("code:old", time.time() - 1)
    one.oauth_state.start("family:new", time.time() + 60)
    assert one.oauth_state.claim("code:old", time.time() + 60)  # gone, so it can be inserted again
