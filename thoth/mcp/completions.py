"""`completion/complete` (docs/clients.md, "Completions"): every prompt argument and template variable that names
something the index holds; anything else completes nothing, as the conformance suite expects."""

from __future__ import annotations

from collections.abc import Mapping

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import Completion, CompletionArgument, CompletionContext, PromptReference, ResourceTemplateReference

from thoth.app import Thoth
from thoth.errors import ServerFault
from thoth.mcp.resources import CHUNK_TEMPLATE, DOCUMENT_TEMPLATE, PAGE_TEMPLATE, VERSIONED_PAGE_TEMPLATE
from thoth.mcp.toolsets import Values
from thoth.records import TreeNode
from thoth.retrieval import readable, workshops
from thoth.retrieval.sources import source_ids
from thoth.store import Store

MAX_VALUES = 100  # the spec's limit per answer
RAPTOR_TEMPLATE = "raptor://{dataset_id}/nodes/{node_id}"


def source_names(store: Store, _: Mapping[str, str]) -> list[str]:
    return source_ids(store)


def workshop_names(store: Store, _: Mapping[str, str]) -> list[str]:
    return source_ids(store, workshops.WORKSHOP)


def exercise_numbers(store: Store, given: Mapping[str, str]) -> list[str]:
    scope = given.get("workshop") or None
    if scope and scope not in workshop_names(store, given):
        return []
    return [str(n) for n in sorted({n for _, n in workshops.indexed_exercises(store, scope)})]


def _containers(store: Store, _: Mapping[str, str]) -> list[str]:
    return readable.containers(store)


def _keys(store: Store, given: Mapping[str, str]) -> list[str]:
    container = given.get("collection")
    return readable.keys(store, container) if container else []


def _pages(store: Store, given: Mapping[str, str]) -> list[str]:
    container, key = given.get("collection"), given.get("key")
    return [str(n) for n in range(1, readable.page_count(store, container, key) + 1)] if container and key else []


def _nodes(store: Store, given: Mapping[str, str]) -> list[str]:
    source_id = given.get("dataset_id")
    if not source_id:
        return []
    return sorted({node.node_id for node in store.find(TreeNode, {"source_id": source_id}, fields=[])})


PAGE_TEMPLATES = (PAGE_TEMPLATE, VERSIONED_PAGE_TEMPLATE)
TEMPLATE_VARIABLES: dict[tuple[str, str], Values] = {
    (RAPTOR_TEMPLATE, "dataset_id"): source_names,
    (RAPTOR_TEMPLATE, "node_id"): _nodes,
    **{(template, "collection"): _containers for template in (DOCUMENT_TEMPLATE, *PAGE_TEMPLATES)},
    **{(template, "key"): _keys for template in (DOCUMENT_TEMPLATE, *PAGE_TEMPLATES)},
    **{(template, "page"): _pages for template in PAGE_TEMPLATES},
    (CHUNK_TEMPLATE, "collection"): source_names,
}


def matching(candidates: list[str], prefix: str) -> Completion:
    """The candidates starting with `prefix` (case-insensitive), at most MAX_VALUES, in their order."""
    wanted = prefix.casefold()
    found = [c for c in candidates if c.casefold().startswith(wanted)]
    return Completion(values=found[:MAX_VALUES], total=len(found), has_more=len(found) > MAX_VALUES)


def register_completions(mcp: MCPServer, app: Thoth, prompt_arguments: Mapping[tuple[str, str], Values]) -> None:
    """`completion/complete` for the served surfaces' prompt arguments and every resource template."""

    @mcp.completion()
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        key = (ref.name if isinstance(ref, PromptReference) else ref.uri, argument.name)
        values = (prompt_arguments if isinstance(ref, PromptReference) else TEMPLATE_VARIABLES).get(key)
        if values is None:
            return Completion(values=[], total=0, has_more=False)
        given = dict(context.arguments or {}) if context else {}
        try:
            candidates = await anyio.to_thread.run_sync(values, app.store, given)
        except ServerFault:  # an index not built yet completes nothing rather than failing the client's UI
            candidates = []
        return matching(candidates, argument.value)
