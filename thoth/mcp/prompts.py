"""Prompts: the ways of using Thoth that clients offer their users (Claude Code: slash commands).

One or more per tool surface, registered only when that surface is served. A prompt returns
messages that steer the assistant to the right tools in the right order; arguments a client can
complete (collections, datasets, workshops, exercise numbers) are listed in thoth.mcp.completions.
An unknown prompt name, or a missing required argument, is JSON-RPC -32602 (invalid params).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, EmbeddedResource, TextResourceContents
from pydantic import Field

from thoth.app import Thoth
from thoth.retrieval import readable


def node_uri(dataset_id: str, node_id: str) -> str:  # as thoth.mcp.toolsets.raptor names its resources
    return f"raptor://{dataset_id}/nodes/{node_id}"


Question = Annotated[str, Field(description="the question to answer, in your own words")]


def _handbook(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Ask the handbook")
    def handbook_question(question: Question) -> str:
        """Answer a question from the handbook, citing the page and section of every passage used."""
        return (
            f"Answer this question from the handbook: {question}\n\n"
            "1. Call search_handbook with the question (num_results 5); search again with other words if the "
            "hits do not answer it.\n"
            "2. Answer only from the passages found. After each statement cite its `source` and `section` "
            "(and `page` for a PDF).\n"
            "3. If the handbook does not answer the question, say so instead of guessing."
        )


def _research(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Answer with citations")
    def answer_with_citations(
        question: Question,
        collection: Annotated[
            str | None, Field(description="the collection to search (list_collections); default: the default one")
        ] = None,
    ) -> str:
        """Search the research library, read the passages in context, and answer citing page and section."""
        scope = f' with collection="{collection}"' if collection else ""
        return (
            f"Answer this question from the research library: {question}\n\n"
            f"1. Call search{scope} with the question; try a second query if the first hits miss.\n"
            "2. For each hit you use, read it in context with fetch_chunk_partition (the whole page or section).\n"
            "3. Answer from what you read. Cite every claim with its document title, page and section, and give "
            "its `source_ref`; resolve_citation turns a source_ref into a link the user can open.\n"
            "4. Say plainly what the library does not cover."
        )


def _qurio(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Look it up in the docs")
    def docs_lookup(
        question: Question,
        source: Annotated[str | None, Field(description="a documentation source id (qurio_list_sources)")] = None,
    ) -> str:
        """Find the documentation pages that answer a question, read them whole, and answer with their URLs."""
        scope = f' with source_id="{source}"' if source else ""
        return (
            f"Answer this from the indexed documentation: {question}\n\n"
            f"1. Call qurio_search{scope}.\n"
            "2. Read the one or two best pages whole with qurio_read_page(url=...).\n"
            "3. Answer with the URL of every page you used."
        )


def _workshop(mcp: MCPServer, _app: Thoth) -> None:
    @mcp.prompt(title="Quiz me on a workshop")
    def quiz_me(
        workshop: Annotated[str, Field(description="the workshop id (list_workshops)")],
        exerciseNumber: Annotated[
            int | None, Field(description="the exercise to be quizzed on; default: one picked at random", ge=0)
        ] = None,
    ) -> str:
        """Quiz me on a workshop exercise: questions one at a time, from its instructions, code and diffs."""
        if exerciseNumber is None:
            scope = f'retrieve_learning_context(workshop="{workshop}", random=true)'
        else:
            scope = f'retrieve_learning_context(workshop="{workshop}", exerciseNumber={exerciseNumber})'
        return (
            f"Quiz me on the workshop {workshop}.\n\n"
            "1. Call retrieve_quiz_instructions and follow its protocol for the whole quiz.\n"
            f"2. Fetch the material with {scope}; while the answer has a nextCursor, call it again with that "
            "cursor alone. retrieve_diff_context has the problem-to-solution diffs.\n"
            "3. Ask me one question at a time about what the exercise teaches, and wait for my answer. Tell me "
            "whether it is right, quoting the part of the exercise that shows it."
        )


def _raptor(mcp: MCPServer, app: Thoth) -> None:
    @mcp.prompt(title="Explain a topic")
    def explain_topic(
        topic: Annotated[str, Field(description="the topic to explain")],
        dataset: Annotated[str | None, Field(description="the dataset to use (list_datasets)")] = None,
    ) -> list[Message]:
        """Explain a topic from broad to specific through a dataset's RAPTOR tree (its top summaries attached)."""
        which = f'dataset_id="{dataset}"' if dataset else "a dataset_id from list_datasets"
        overview = readable.top_summaries(app.store, dataset) if dataset else []
        embedded: list[Message] = [
            UserMessage(
                EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri=node_uri(dataset or "", node_id), mime_type="text/plain", text=text
                    ),
                )
            )
            for node_id, text in overview
        ]
        return [
            *embedded,
            UserMessage(
                f"Explain {topic}.\n\n"
                f"1. Call rag_retrieve with {which}, the topic as query and expand_k=3: a walk of the tree from "
                "its top-level summaries down.\n"
                "2. Start the explanation from the highest-level summaries (the big picture), then go down with "
                "rag_node_children to the passages (level 0) for the specifics.\n"
                "3. Cite the passages you use by their resource URI (raptor://…)."
                + ("\n\nThe dataset's broadest summaries are attached above." if embedded else "")
            ),
        ]


SURFACES: dict[str, Callable[[MCPServer, Thoth], None]] = {
    "handbook": _handbook,
    "research": _research,
    "qurio": _qurio,
    "workshop": _workshop,
    "raptor": _raptor,
}


def register_prompts(mcp: MCPServer, app: Thoth) -> None:
    for name in app.settings.toolsets:
        if name in SURFACES:
            SURFACES[name](mcp, app)
    mcp.middleware.append(_PromptArgumentCheck(mcp))


class _PromptArgumentCheck:
    """`prompts/get` with an unknown name or without a required argument: -32602, not an internal error."""

    def __init__(self, mcp: MCPServer):
        self.mcp = mcp

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.method == "prompts/get" and isinstance(ctx.params, dict):
            name, given = ctx.params.get("name"), ctx.params.get("arguments") or {}
            prompts = {p.name: p for p in await self.mcp.list_prompts()}
            if name not in prompts:
                known = ", ".join(sorted(prompts)) or "(none)"
                raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; prompts: {known}", {"name": name})
            missing = [a.name for a in prompts[name].arguments or [] if a.required and a.name not in given]
            if missing:
                raise MCPError(INVALID_PARAMS, f"prompt {name!r} needs argument(s): {', '.join(missing)}")
        return await call_next(ctx)
