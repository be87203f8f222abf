"""The RAPTOR surface (seed 003): datasets, sessions, ingest, answers, tree retrieval and navigation.

A dataset is a source; its tree's nodes are its chunks (level 0) and RAPTOR summary nodes
(level >= 1), each readable as the resource `raptor://{dataset_id}/nodes/{node_id}`.
"""

from __future__ import annotations

import threading
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations
from pydantic import BaseModel, Field

from ingest.documents import IngestError, ingest_text
from ingest.pipeline import Ingestor
from thoth.app import Thoth
from thoth.embed import get_tokenizer
from thoth.mcp.failures import to_client
from thoth.mcp.progress import Progress, ProgressEmbedder, with_progress
from thoth.mcp.roles import current_caller
from thoth.mcp.tools import call, read_only_tool, respond, writer_tool
from thoth.retrieval import tree
from thoth.retrieval.answer import answer_question as answer
from thoth.retrieval.sessions import create_session
from thoth.retrieval.source_ref import content_hash
from thoth.retrieval.summarise import on_demand_summariser
from thoth.store import filters
from thoth.store.schema import CHUNKS

WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

DatasetId = Annotated[
    str, Field(description="dataset id (a source id, see list_datasets)", min_length=1, max_length=64)
]
NodeId = Annotated[
    str, Field(description="node id: a chunk id (level 0) or a summary node id", min_length=1, max_length=128)
]
Query = Annotated[str, Field(description="natural-language question or search query", min_length=1, max_length=2000)]
Mode = Annotated[
    Literal["collapsed", "traversal"],
    Field(description="collapsed: chunks and summaries searched together; traversal: top-down through the tree"),
]
TopK = Annotated[int, Field(description="number of results", ge=1, le=50)]
ExpandK = Annotated[int, Field(description="traversal: nodes kept (and expanded) at each level", ge=1, le=20)]


def node_uri(dataset_id: str, node_id: str) -> str:
    return f"raptor://{dataset_id}/nodes/{node_id}"


# -- shapes ------------------------------------------------------------------------------------------------


class Dataset(BaseModel):
    id: str
    name: str
    kind: str
    documents: int
    chunks: int
    has_tree: bool
    tree_levels: int = Field(description="summary levels above the chunks")
    tree_nodes: int = Field(description="summary nodes")
    summariser: str | None = Field(description="which summariser wrote the tree")
    updated_at: str | None


class DatasetList(BaseModel):
    datasets: list[Dataset]


class Session(BaseModel):
    session_id: str
    dataset_id: str
    title: str
    created_at: str


class Ingested(BaseModel):
    dataset_id: str
    doc_id: str
    key: str = Field(description="the document's path inside the dataset")
    status: Literal["ingested", "unchanged"]
    chunks: int
    tree: str | None = Field(description="what the tree update did")


class Node(BaseModel):
    node_id: str
    dataset_id: str
    uri: str
    level: int = Field(description="0 for a chunk, 1 and up for summaries")
    text: str
    children: list[str]
    parent: str | None = Field(description="the summary node this one belongs to most (summary nodes only)")
    leaf_count: int = Field(description="chunks below this node")
    summariser: str | None
    chunk_id: str | None
    doc_id: str | None
    source: str | None = Field(description="file path inside the dataset (chunks only)")
    section: str | None
    source_ref: str | None


class Hit(Node):
    rank: int
    score: float = Field(description="rank score: fused (collapsed) or cosine similarity (traversal)")
    similarity: float | None = Field(description="cosine similarity of the query and the node")


class Hits(BaseModel):
    dataset_id: str
    query: str
    mode: str
    results: list[Hit]


class NodeList(BaseModel):
    node_id: str
    relation: str
    nodes: list[Node]


class Citation(BaseModel):
    number: int
    node_id: str
    uri: str
    level: int
    source: str | None
    section: str | None
    source_ref: str | None
    similarity: float
    text: str


class Answer(BaseModel):
    dataset_id: str
    query: str
    mode: str
    answer: str
    answer_type: Literal["extractive", "generated", "no_context"]
    model: str | None = Field(description="the LLM that wrote a generated answer")
    citations: list[Citation]


class Summary(BaseModel):
    node_ids: list[str]
    summary: str
    summariser: str


def _node(row: dict) -> Node:
    return Node(
        node_id=row["node_id"],
        dataset_id=row["dataset_id"],
        uri=node_uri(row["dataset_id"], row["node_id"]),
        level=row["level"],
        text=row["text"],
        children=list(row.get("children") or []),
        parent=row.get("parent"),
        leaf_count=row.get("leaf_count") or 1,
        summariser=row.get("summariser"),
        chunk_id=row.get("chunk_id"),
        doc_id=row.get("doc_id"),
        source=row.get("key"),
        section=row.get("section"),
        source_ref=row.get("source_ref"),
    )


def _hit(rank: int, row: dict) -> Hit:
    similarity = row.get("similarity")
    return Hit(
        **_node(row).model_dump(),
        rank=rank,
        score=round(float(row["score"]), 6),
        similarity=round(float(similarity), 4) if similarity is not None else None,
    )


def _label(node: Node) -> str:
    if node.level == 0:
        where = f"{node.source} > {node.section}" if node.section else node.source
        return f"chunk {node.node_id} ({where})"
    return f"level-{node.level} summary {node.node_id} ({node.leaf_count} chunks)"


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render_nodes(title: str, nodes: list[Node]) -> str:
    if not nodes:
        return f"{title}: none"
    return f"{title}:\n" + "\n".join(f"- {_label(n)}: {_excerpt(n.text, 200)}" for n in nodes)


def register(mcp: MCPServer, app: Thoth) -> None:
    ingest_lock = threading.Lock()  # one ingest at a time per process: a dataset's tree is rebuilt whole

    @read_only_tool(mcp)
    def list_datasets() -> Annotated[CallToolResult, DatasetList]:
        """List the datasets (indexed sources) with their document, chunk and RAPTOR tree counts."""
        data = DatasetList(datasets=call("list_datasets", lambda: tree.list_datasets(app.store)))
        lines = [
            f"- {d.id} ({d.kind}): {d.documents} documents, {d.chunks} chunks, "
            + (f"tree of {d.tree_nodes} summary nodes in {d.tree_levels} levels" if d.has_tree else "no tree")
            for d in data.datasets
        ]
        return respond(data, "Available datasets:\n" + ("\n".join(lines) or "(none)"))

    @mcp.tool(annotations=WRITES)
    def create_chat_session(
        dataset_id: DatasetId,
        title: Annotated[str, Field(description="session title", min_length=1, max_length=200)] = "New Chat Session",
    ) -> Annotated[CallToolResult, Session]:
        """Create a chat session over a dataset; it is stored, keeps its id, and belongs to you alone."""
        owner = current_caller().key
        row = call("create_chat_session", lambda: create_session(app.store, dataset_id, title, owner))
        data = Session(
            session_id=row["session_id"],
            dataset_id=row["source_id"],
            title=row["title"],
            created_at=row["created_at"].isoformat(),
        )
        text = f"Successfully created chat session {data.session_id} for dataset {dataset_id} with title '{data.title}'"
        return respond(data, text)

    @writer_tool(mcp, WRITES)
    async def ingest_document(
        dataset_id: Annotated[
            str, Field(description="dataset to add to; created if new (lowercase letters, digits, '-')", max_length=64)
        ],
        file_content: Annotated[str, Field(description="the document's text (plain text or Markdown)", min_length=1)],
        source: Annotated[
            str | None, Field(description="where the text comes from (a path or URL); names the document")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="tags stored with the document's chunks")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, Ingested]:
        """Ingest a text document into a dataset: chunked, embedded and indexed, and the dataset's tree updated.

        The same source (or, without one, the same text) replaces the earlier version.
        """

        size = len(file_content.encode("utf-8", errors="replace"))
        if size > app.settings.max_document_bytes:
            raise ToolError(
                f"file_content is {size} bytes; the limit is {app.settings.max_document_bytes} bytes "
                "(THOTH_MAX_DOCUMENT_BYTES): split the document, or ingest large files with the ingest job"
            )

        def run(progress: Progress) -> Ingested:
            with ingest_lock:
                embedder = ProgressEmbedder(app.embedder(), progress)  # notifications/progress: chunks embedded
                ingestor = Ingestor(app.settings, store=app.store, embedder=embedder)
                key, summary = ingest_text(ingestor, app.store, dataset_id, file_content, source, tags)
            if summary.failed:
                raise IngestError(f"file_content could not be ingested: {summary.failed[0][1]}")
            doc_id = content_hash(file_content.encode("utf-8"))
            scope = f"{filters.eq('source_id', dataset_id)} AND {filters.eq('doc_id', doc_id)}"
            return Ingested(
                dataset_id=dataset_id,
                doc_id=doc_id,
                key=key,
                status="ingested" if summary.ingested else "unchanged",
                chunks=app.store.count(CHUNKS, scope),
                tree=summary.tree.render() if summary.tree else None,
            )

        data = await with_progress(ctx, lambda progress: call("ingest_document", lambda: run(progress)))
        text = (
            f"Successfully ingested document into dataset {dataset_id}. Document ID: {data.doc_id}, "
            f"Chunks: {data.chunks}" + (f" ({data.status})" if data.status == "unchanged" else "")
        )
        return respond(data, text)

    @read_only_tool(mcp)
    async def answer_question(
        dataset_id: DatasetId,
        query: Query,
        mode: Mode = "collapsed",
        top_k: Annotated[int, Field(description="passages to consider", ge=1, le=20)] = 5,
        temperature: Annotated[float, Field(description="LLM temperature (generated answers)", ge=0, le=2)] = 0.7,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, Answer]:
        """Answer a question from a dataset, citing the passages used as [1], [2], ….

        Extractive (quoted sentences) by default, generated when an LLM is configured; `answer_type`
        says which, and 'no_context' when nothing relevant was found (no answer is invented).
        """

        def run(progress: Progress) -> dict:
            llm = f" with {app.settings.llm_model or app.settings.llm_provider}" if app.settings.llm_provider else ""
            progress(0, 1, f"retrieving passages and answering{llm}")
            return answer(
                app.store,
                app.embedder(),
                app.settings,
                dataset_id,
                query,
                mode=mode,
                top_k=top_k,
                temperature=temperature,
            )

        result = await with_progress(ctx, lambda progress: call("answer_question", lambda: run(progress)))
        citations = [Citation(uri=node_uri(dataset_id, c["node_id"]), **c) for c in result["citations"]]
        data = Answer(**{**result, "citations": citations})
        kind = f"generated by {data.model}" if data.answer_type == "generated" else data.answer_type
        context = "\n".join(
            f"[{c.number}] {c.source or f'level-{c.level} summary'}"
            + (f" > {c.section}" if c.section else "")
            + f" ({c.uri}): {_excerpt(c.text)}"
            for c in citations
        )
        return respond(data, f"Answer ({kind}): {data.answer}\n\nContext:\n{context or '(none)'}")

    @read_only_tool(mcp)
    def retrieve_documents(
        dataset_id: DatasetId,
        query: Query,
        mode: Mode = "collapsed",
        top_k: TopK = 5,
        expand_k: ExpandK = 3,
    ) -> Annotated[CallToolResult, Hits]:
        """Retrieve the passages and summaries of a dataset most relevant to a query."""

        def run() -> list[dict]:
            return tree.retrieve(
                app.store, app.embedder(), dataset_id, query, mode=mode, top_k=top_k, expand_k=expand_k
            )

        hits = [_hit(i, row) for i, row in enumerate(call("retrieve_documents", run), start=1)]
        data = Hits(dataset_id=dataset_id, query=query, mode=mode, results=hits)
        lines = [f"{h.rank}. {_label(h)} score {h.score:.3f}\n{_excerpt(h.text, 600)}" for h in hits]
        return respond(data, "Retrieved documents:\n\n" + ("\n\n".join(lines) or f"no results for {query!r}"))

    @read_only_tool(mcp)
    def rag_retrieve(
        dataset_id: DatasetId,
        query: Query,
        top_k: TopK = 5,
        levels_cap: Annotated[
            int | None, Field(description="highest tree level searched (0: chunks only)", ge=0, le=20)
        ] = None,
        expand_k: Annotated[
            int | None, Field(description="walk the tree top-down keeping this many nodes per level", ge=1, le=20)
        ] = None,
        reranker: Annotated[
            bool | None, Field(description="re-order candidates by embedding similarity to the query")
        ] = None,
        score_threshold: Annotated[
            float | None, Field(description="drop results whose cosine similarity is below this", ge=-1, le=1)
        ] = None,
    ) -> Annotated[CallToolResult, Hits]:
        """Retrieve RAPTOR tree nodes for a query, as resources raptor://{dataset_id}/nodes/{node_id}.

        Collapsed-tree search (chunks and summaries together) by default; with expand_k, a top-down
        traversal keeping expand_k nodes per level. Each resource's _meta has score, chunk_id and doc_id.
        """
        mode = "traversal" if expand_k is not None else "collapsed"

        def run() -> list[dict]:
            return tree.retrieve(
                app.store,
                app.embedder(),
                dataset_id,
                query,
                mode=mode,
                top_k=top_k,
                expand_k=expand_k or 3,
                levels_cap=levels_cap,
                reranker=bool(reranker),
                score_threshold=score_threshold,
            )

        hits = [_hit(i, row) for i, row in enumerate(call("rag_retrieve", run), start=1)]
        data = Hits(dataset_id=dataset_id, query=query, mode=mode, results=hits)
        content: list[TextContent | EmbeddedResource] = [
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri=h.uri,
                    mime_type="text/plain",
                    text=h.text,
                    _meta={
                        "score": h.score,
                        "similarity": h.similarity,
                        "chunk_id": h.chunk_id,
                        "doc_id": h.doc_id,
                        "level": h.level,
                        "node_id": h.node_id,
                    },
                ),
            )
            for h in hits
        ]
        if not content:
            content = [TextContent(type="text", text=f"No results for {query!r} in dataset {dataset_id}.")]
        return CallToolResult(content=content, structured_content=data.model_dump(mode="json"))

    @read_only_tool(mcp)
    def rag_node_get(node_id: NodeId) -> Annotated[CallToolResult, Node]:
        """Get one tree node (a chunk or a summary): its text, level, children, parent and source."""
        node = _node(call("rag_node_get", lambda: tree.get_node(app.store, node_id)))
        meta = node.model_dump(exclude={"text"})
        return respond(node, f"Node metadata: {meta}\n\n{node.text}")

    @read_only_tool(mcp)
    def rag_node_children(node_id: NodeId) -> Annotated[CallToolResult, NodeList]:
        """List the children of a tree node (summaries or chunks one level down; none for a chunk)."""
        _, kids = call("rag_node_children", lambda: tree.children(app.store, node_id))
        data = NodeList(node_id=node_id, relation="children", nodes=[_node(k) for k in kids])
        return respond(data, _render_nodes("Child nodes", data.nodes))

    @read_only_tool(mcp)
    def rag_node_navigation(
        node_id: NodeId,
        direction: Annotated[
            Literal["parent", "siblings"], Field(description="parent: the node(s) one level up; siblings: same parent")
        ],
    ) -> Annotated[CallToolResult, NodeList]:
        """Move from a tree node to its parent(s) or its siblings."""
        _, nodes = call("rag_node_navigation", lambda: tree.navigate(app.store, node_id, direction))
        data = NodeList(node_id=node_id, relation=direction, nodes=[_node(n) for n in nodes])
        return respond(data, _render_nodes(direction.capitalize(), data.nodes))

    @read_only_tool(mcp)
    def rag_path_to_root(node_id: NodeId) -> Annotated[CallToolResult, NodeList]:
        """The path from a node up to the top of its tree, following each node's main parent."""
        path = [_node(n) for n in call("rag_path_to_root", lambda: tree.path_to_root(app.store, node_id))]
        data = NodeList(node_id=node_id, relation="path_to_root", nodes=path)
        text = "Path to root: " + " -> ".join(f"level {n.level} {n.node_id}" for n in path)
        return respond(data, text + "\n\n" + _render_nodes("Nodes", path))

    @read_only_tool(mcp)
    async def rag_summarize(
        node_ids: Annotated[list[str], Field(description="ids of the nodes to summarise", min_length=1, max_length=50)],
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, Summary]:
        """Summarise the text of the given tree nodes (extractive, or by the LLM when one is configured)."""

        def run(progress: Progress) -> Summary:
            nodes = tree.nodes_by_id(app.store, node_ids)
            summariser = on_demand_summariser(app.settings, get_tokenizer(app.settings))
            progress(0, 1, f"summarising {len(nodes)} nodes ({summariser.name})")
            text = summariser.summarise([n["text"] for n in nodes])
            progress(1, 1, "summarised")
            return Summary(node_ids=[n["node_id"] for n in nodes], summary=text, summariser=summariser.name)

        data = await with_progress(ctx, lambda progress: call("rag_summarize", lambda: run(progress)))
        return respond(data, data.summary)

    @mcp.resource(
        "raptor://{dataset_id}/nodes/{node_id}",
        name="raptor_node",
        description="A RAPTOR tree node's text: a chunk (level 0) or a summary of the nodes below it",
        mime_type="text/plain",
    )
    def raptor_node(dataset_id: str, node_id: str) -> str:
        try:
            return tree.get_node(app.store, node_id, dataset_id=dataset_id)["text"]
        except Exception as exc:
            raise to_client("raptor_node", exc, "resource") from exc
