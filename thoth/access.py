"""Collections shared with some people: THOTH_ACCESS_FILE (its format: docs/security.md, "Collections shared
with some people"), and what each caller may read and write. `reading` holds, for the request being handled,
the collections its caller may read; `Thoth.store` hands retrieval a store filtered by them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from thoth.config import ConfigError
from thoth.records import EVERY_COLLECTION, Collections

ANYONE = "*"
ALLOWED = "an email, domain:NAME, group:NAME or *"
ENTRY_KEYS = ("readers", "writers")
TOP_KEYS = ("default", "collections")


def listed(email: str | None, names: tuple[str, ...]) -> bool:
    """Whether a list of emails and `domain:NAME`s (THOTH_AUTH_MEMBERS, THOTH_AUTH_WRITERS,
    THOTH_INTERNAL_IDENTITIES) names the person with this verified email."""
    if not email:
        return False
    email = email.lower()
    return email in names or f"domain:{email.rsplit('@', 1)[-1]}" in names


def groups_of(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """A token's `groups` claim (a list of names), where the provider sends one; () otherwise."""
    groups = claims.get("groups")
    if not isinstance(groups, list):
        return ()
    return tuple(g for g in groups if isinstance(g, str) and g)


@dataclass(frozen=True)
class Person:
    """Who is asking, as the access file names people: a verified email and the provider's groups (none
    for a caller without an email, who matches only `*`)."""

    email: str | None = None
    groups: tuple[str, ...] = ()

    def names(self) -> frozenset[str]:
        """Every name in the file that means this person."""
        names = {ANYONE}
        if self.email:
            email = self.email.lower()
            names |= {email, f"domain:{email.rsplit('@', 1)[-1]}"}
        names |= {f"group:{group.lower()}" for group in self.groups}
        return frozenset(names)


@dataclass(frozen=True)
class Access:
    """What one caller may read and write."""

    read: Collections = EVERY_COLLECTION
    write: Collections = EVERY_COLLECTION


FULL_ACCESS = Access()


@dataclass(frozen=True)
class Grant:
    """Who may read and who may write one collection (or the default)."""

    readers: frozenset[str] = frozenset()
    writers: frozenset[str] = frozenset()

    def reads(self, names: frozenset[str]) -> bool:
        return bool(names & (self.readers | self.writers))

    def writes(self, names: frozenset[str]) -> bool:
        return bool(names & self.writers)


@dataclass(frozen=True)
class AccessRules:
    """THOTH_ACCESS_FILE, parsed: a grant per named collection and the default for the others."""

    collections: Mapping[str, Grant]
    default: Grant = Grant()

    def access(self, person: Person) -> Access:
        names = person.names()
        return Access(self._set(names, Grant.reads), self._set(names, Grant.writes))

    def _set(self, names: frozenset[str], allows) -> Collections:  # noqa: ANN001 - Grant.reads or Grant.writes
        granted = frozenset(c for c, grant in self.collections.items() if allows(grant, names))
        if allows(self.default, names):  # every collection but the named ones not granted
            return Collections(frozenset(self.collections) - granted, all_but=True)
        return Collections(granted, all_but=False)


def _principal(path: str, entry: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: {entry}: {value!r} is not {ALLOWED}")
    item = value.strip()
    kind, sep, name = item.partition(":")
    if item == ANYONE:
        return ANYONE
    if sep and kind.lower() in ("domain", "group") and name.strip() and "@" not in name and " " not in name:
        return f"{kind.lower()}:{name.strip().lower()}"
    if not sep and "@" in item and " " not in item and not item.startswith("@") and not item.endswith("@"):
        return item.lower()
    raise ConfigError(f"{path}: {entry}: {item!r} is not {ALLOWED}")


def _grant(path: str, entry: str, value: object) -> Grant:
    if value is None:
        return Grant()
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {entry} must be a mapping with {' and/or '.join(ENTRY_KEYS)}, got {value!r}")
    if unknown := [k for k in value if k not in ENTRY_KEYS]:
        raise ConfigError(f"{path}: {entry}: unknown key {unknown[0]!r}; allowed: {', '.join(ENTRY_KEYS)}")
    lists = {}
    for key in ENTRY_KEYS:
        items = value.get(key) or []
        if not isinstance(items, list):
            raise ConfigError(f"{path}: {entry}.{key} must be a list of {ALLOWED}, got {items!r}")
        lists[key] = frozenset(_principal(path, f"{entry}.{key}", item) for item in items)
    return Grant(lists["readers"], lists["writers"])


def parse_rules(text: str, path: str) -> AccessRules:
    """The rules in `text` (the file at `path`, named in every error), checked whole."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping with the keys {' and '.join(TOP_KEYS)}")
    if unknown := [k for k in data if k not in TOP_KEYS]:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r}; allowed: {', '.join(TOP_KEYS)}")
    named = data.get("collections") or {}
    if not isinstance(named, dict):
        raise ConfigError(f"{path}: collections must map each collection's id to its readers and writers")
    collections = {}
    for name, value in named.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{path}: collections: {name!r} is not a collection id")
        collections[name] = _grant(path, f"collections.{name}", value)
    return AccessRules(collections, _grant(path, "default", data.get("default")))


def load_rules(path: str) -> AccessRules | None:
    """THOTH_ACCESS_FILE's rules; None when no file is configured (every caller reads everything)."""
    if not path:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"THOTH_ACCESS_FILE: cannot read {path}: {exc.strerror or exc}") from None
    return parse_rules(text, path)


_reading: ContextVar[Collections] = ContextVar("thoth_reading", default=EVERY_COLLECTION)


def readable() -> Collections:
    """The collections the caller of the request being handled may read (every one outside a request)."""
    return _reading.get()


@contextmanager
def reading(collections: Collections) -> Iterator[None]:
    """Within the block, the caller may read only `collections`."""
    token = _reading.set(collections)
    try:
        yield
    finally:
        _reading.reset(token)
