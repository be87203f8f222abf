"""Small state kept beside the tables: settings (key/value), the embedding model the index was built
with, and each source's tree pointer, the one write that makes a new tree visible."""

from __future__ import annotations

import dataclasses
import json

from thoth.config import REMOTE_EMBED_PROVIDERS
from thoth.records import TreePointer, field_names
from thoth.store import filters
from thoth.store.schema import (
    INDEX_FORMAT,
    META_EMBED_DIM,
    META_EMBED_MODEL,
    META_EMBED_PROMPTS,
    META_INDEX_FORMAT,
    META_TREE_PREFIX,
    SETTINGS,
    TREE_NODES,
)
from thoth.store.tables import ModelMismatch, StoreError, Tables

TREE_WRITE_BATCH = 4096  # tree rows written per commit
NO_PROMPTS = ("", "")  # (query, document) prompts: none
PROMPT_KEYS = ("query", "document", "query_task", "document_task")  # the last two: Vertex AI task types


def pointer_json(pointer: TreePointer) -> str:
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(pointer).items()}
    return json.dumps({k: v for k, v in values.items() if v is not None}, sort_keys=True)


def pointer_of(raw: str) -> TreePointer:
    values = json.loads(raw)
    known = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in field_names(TreePointer)}
    return TreePointer(**known)


def model_settings(recorded: str) -> str:
    """The settings that load the model recorded as `recorded` (a remote one as "provider:model")."""
    provider, _, model = recorded.partition(":")
    if model and provider in REMOTE_EMBED_PROVIDERS:
        return f"THOTH_EMBED_PROVIDER={provider} THOTH_EMBED_MODEL={model}"
    return f"THOTH_EMBED_MODEL={recorded}"


def model_values(model_name: str, dim: int, prompts: tuple[str, ...]) -> dict[str, str]:
    """The settings rows that record a model (the prompts' row only when there are prompts, so an
    index built without any reads as it always did)."""
    values = {META_EMBED_MODEL: model_name, META_EMBED_DIM: str(dim)}
    if any(prompts):
        named = dict(zip(PROMPT_KEYS, prompts, strict=False))
        values[META_EMBED_PROMPTS] = json.dumps(named, sort_keys=True)
    return values


def _prompt_settings(prompts: tuple[str, ...]) -> str:
    query, document = prompts[:2]
    said = [f" THOTH_EMBED_QUERY_PROMPT={query!r}"] if query else []
    said += [f" THOTH_EMBED_DOCUMENT_PROMPT={document!r}"] if document else []
    return "".join(said)


def _prompts_said(prompts: tuple[str, ...]) -> str:
    query, document = prompts[:2]
    said = f", query prompt {query!r}, document prompt {document!r}" if query or document else ""
    return said + (f", task types {prompts[2]!r} / {prompts[3]!r}" if len(prompts) > 3 else "")


class Metadata:
    def __init__(self, tables: Tables):
        self.tables = tables

    def get(self, key: str) -> str | None:
        return self.values(key).get(key)

    def values(self, *keys: str) -> dict[str, str]:
        """Each of `keys` that is set, with its value, in one read."""
        if not keys:
            return {}
        rows = self.tables.table(SETTINGS).search().where(filters.is_in("key", keys)).limit(len(keys)).to_list()
        return {row["key"]: row["value"] for row in rows}

    def set(self, values: dict[str, str]) -> None:
        """Write several keys in one commit (readers never see half of them); safe under concurrent
        writers, `key` being the table's primary key."""
        now = self.values(*values)
        changed = {k: v for k, v in values.items() if now.get(k) != v}
        if changed:
            rows = [{"key": k, "value": v} for k, v in changed.items()]
            self.tables.merge(SETTINGS, "key", rows, f"settings {', '.join(changed)}")

    # -- the model check ------------------------------------------------------------------

    def index_format(self) -> int | None:
        """The format the index was written in (thoth.store.migration; None: not recorded, an index written
        before formats were); StoreError for a format newer than this code reads."""
        return self._known_format(self.get(META_INDEX_FORMAT))

    def _known_format(self, raw: str | None) -> int | None:
        if raw and int(raw) > INDEX_FORMAT:
            raise StoreError(
                f"the index at {self.tables.uri} is format {raw}, newer than this Thoth reads (format "
                f"{INDEX_FORMAT}): run the Thoth version that wrote it, or a later one"
            )
        return int(raw) if raw else None

    def index_model(self) -> tuple[str | None, int | None]:
        """The model the index was built with; every model check reads it, so a newer format is refused here."""
        if SETTINGS not in self.tables.names():
            return None, None
        known = self.values(META_INDEX_FORMAT, META_EMBED_MODEL, META_EMBED_DIM)  # one read a check
        self._known_format(known.get(META_INDEX_FORMAT))
        dim = known.get(META_EMBED_DIM)
        return known.get(META_EMBED_MODEL), int(dim) if dim else None

    def index_prompts(self) -> tuple[str, ...]:
        """(query, document) prompts the index's vectors were made with, and (query, document) task
        types when it was built with some."""
        raw = self.get(META_EMBED_PROMPTS) if SETTINGS in self.tables.names() else None
        values = json.loads(raw) if raw else {}
        keys = PROMPT_KEYS if "query_task" in values else PROMPT_KEYS[:2]
        return tuple(values.get(k, "") for k in keys)

    def check_model(self, model_name: str, dim: int, prompts: tuple[str, ...] = NO_PROMPTS) -> None:
        """Raise ModelMismatch unless the index was built with this model and these prompts (or is empty)."""
        built_with, built_dim = self.index_model()
        if built_with is None:
            return
        built_prompts = self.index_prompts()
        if built_with != model_name or built_dim != dim or built_prompts != tuple(prompts):
            setting = model_settings(built_with) + _prompt_settings(built_prompts)
            raise ModelMismatch(
                f"the index at {self.tables.uri} was built with embedding model {built_with!r} ({built_dim} "
                f"dimensions{_prompts_said(built_prompts)}) but this process loads {model_name!r} ({dim} "
                f"dimensions{_prompts_said(tuple(prompts))}); set {setting} "
                "or move the index to this model: run `python -m ingest --reembed` with these settings "
                '(docs/models.md, "Changing model")'
            )

    def record_model(self, model_name: str, dim: int, prompts: tuple[str, ...] = NO_PROMPTS) -> None:
        self.check_model(model_name, dim, prompts)
        self.set(model_values(model_name, dim, prompts))

    # -- tree pointers ----------------------------------------------------------------------

    def tree_pointer(self, source_id: str) -> TreePointer | None:
        """The current tree of a source, or None if none was built."""
        if SETTINGS not in self.tables.names():
            return None
        raw = self.get(META_TREE_PREFIX + source_id)
        return pointer_of(raw) if raw else None

    def set_tree_pointer(self, source_id: str, pointer: TreePointer) -> None:
        """Rewrite a source's tree pointer (e.g. mark its tree stale); `replace_tree` writes a new one."""
        self.set({META_TREE_PREFIX + source_id: pointer_json(pointer)})

    def replace_tree(self, source_id: str, rows: list[dict], pointer: TreePointer) -> None:
        """Write a source's new tree (`pointer.version`) so readers never see half of it.

        Rows go in under their own `tree_version` (after removing any a killed run left with that
        version), then the source's pointer switches to it in one write, then older versions go.
        """
        scope, version = filters.eq("source_id", source_id), filters.eq("tree_version", pointer.version)
        self.tables.delete(TREE_NODES, f"{scope} AND {version}")
        for start in range(0, len(rows), TREE_WRITE_BATCH):
            self.tables.add(TREE_NODES, rows[start : start + TREE_WRITE_BATCH])
        self.set_tree_pointer(source_id, pointer)
        self.tables.delete(TREE_NODES, f"{scope} AND NOT {version}")

    def drop_tree(self, source_id: str) -> None:
        names = self.tables.names()
        if TREE_NODES in names:
            self.tables.delete(TREE_NODES, filters.eq("source_id", source_id))
        if SETTINGS in names:
            self.tables.delete(SETTINGS, filters.eq("key", META_TREE_PREFIX + source_id))
