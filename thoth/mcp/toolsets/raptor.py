"""The RAPTOR surface (docs/raptor.md): datasets, sessions, ingest, answers, tree retrieval and navigation."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations
from pydantic import Field

from thoth.app import Thoth
from thoth.embed import get_tokenizer
from thoth.errors import ClientError
from thoth.mcp.completions import RAPTOR_TEMPLATE, source_names
from thoth.mcp.failures import answered
from thoth.mcp.outputs.raptor import Answer, DatasetList, Hits, Ingested, Node, NodeList, Session, Summary, node_uri
from thoth.mcp.outputs.raptor import Dataset as DatasetOut
from thoth.mcp.progress import ProgressEmbedder, Report, silent
from thoth.mcp.roles import current_caller, require_writer_of
from thoth.mcp.tools import expose
from thoth.mcp.toolsets import Toolset
from thoth.records import Chunk
from thoth.retrieval import answer, readable, sources, tree
from thoth.retrieval.sessions import create_session
from thoth.source_ref import content_hash
from thoth.summarise import on_demand_summariser

MAX_DOCUMENT_BYTES = 2 * 1024 * 1024  # ingest_document's limit: one write's memory stays small
DOCUMENT_RUN_BYTES = 256 * 1024  # a longer text is a run of its own, answered with its id at once
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


def list_datasets(app: Thoth) -> DatasetList:
    """List the datasets (indexed sources) with their document, chunk and RAPTOR tree counts."""
    return DatasetList(datasets=[DatasetOut.from_record(d) for d in sources.listing(app.store)])


def create_chat_session(
    app: Thoth,
    dataset_id: DatasetId,
    title: Annotated[str, Field(description="session title", min_length=1, max_length=200)] = "New Chat Session",
    *,
    owner: str,
) -> Session:
    """Create a chat session over a dataset; it is stored, keeps its id, and belongs to you alone."""
    return Session.from_record(create_session(app.store, dataset_id, title, owner))


def ingest_document(
    app: Thoth,
    dataset_id: Annotated[
        str, Field(description="dataset to add to; created if new (lowercase letters, digits, '-')", max_length=64)
    ],
    file_content: Annotated[str, Field(description="the document's text (plain text or Markdown)", min_length=1)],
    source: Annotated[
        str | None, Field(description="where the text comes from (a path or URL); names the document")
    ] = None,
    tags: Annotated[list[str] | None, Field(description="tags stored with the document's chunks")] = None,
    *,
    progress: Report = silent,
    caller: str = "",
) -> Ingested:
    """Ingest a text document into a dataset: chunked, embedded and indexed, and the dataset's tree updated.

    The same source (or, without one, the same text) replaces the earlier version. A long text is ingested
    by a run of its own: the answer is its run_id (status 'started'), which get_run follows.
    """
    require_writer_of(dataset_id, "dataset_id", "dataset")
    size = len(file_content.encode("utf-8", errors="replace"))
    if size > MAX_DOCUMENT_BYTES:
        raise ClientError(
            f"file_content is {size} bytes; the limit is {MAX_DOCUMENT_BYTES} bytes: "
            "split the document, or ingest large files with the ingest job",
            argument="file_content",
        )
    # the writer's modules (chunking, parsers, tree updates) load with the first ingest, not at every start
    from thoth.writes.documents import document_key, ingest_text
    from thoth.writes.launch import records_here
    from thoth.writes.writer import Writer

    if size > DOCUMENT_RUN_BYTES and records_here(app.settings):  # a long text: a run of its own
        from thoth.writes.source_runs import start_document

        run = start_document(app.store, app.settings, dataset_id, file_content, source, tags, caller=caller)
        data = file_content.encode("utf-8")
        return Ingested(
            dataset_id=dataset_id,
            doc_id=content_hash(data),
            key=document_key(data, source),
            status="started",
            chunks=0,
            tree=None,
            run_id=run.run_id,
        )

    with app.writes.hold():  # one write per instance (its memory); Busy, a retryable tool error, after a wait
        embedder = ProgressEmbedder(app.embedder(), progress)  # notifications/progress: chunks embedded
        # the whole index: the caller may write this dataset, and a write keeps the others' rows as they are
        writer = Writer(app.settings, store=app.index, embedder=embedder)
        writer.abandon = app.writes.abandon  # SIGTERM: stops before writing, a retryable tool error
        key, summary = ingest_text(writer, app.index, dataset_id, file_content, source, tags, started_by=caller)
    if summary.failed:
        raise ClientError(f"file_content could not be ingested: {summary.failed[0][1]}")
    doc_id = content_hash(file_content.encode("utf-8"))
    return Ingested(
        dataset_id=dataset_id,
        doc_id=doc_id,
        key=key,
        status="ingested" if summary.ingested else "unchanged",
        chunks=app.store.count_of(Chunk, {"source_id": dataset_id, "doc_id": doc_id}),
        tree=summary.tree.render() if summary.tree else None,
    )


def answer_question(
    app: Thoth,
    dataset_id: DatasetId,
    query: Query,
    mode: Mode = "collapsed",
    top_k: Annotated[int, Field(description="passages to consider", ge=1, le=20)] = 5,
    temperature: Annotated[float, Field(description="LLM temperature (generated answers)", ge=0, le=2)] = 0.7,
    *,
    progress: Report = silent,
) -> Answer:
    """Answer a question from a dataset, citing the passages used as [1], [2], ….

    Extractive (quoted sentences) by default, generated when an LLM is configured; `answer_type`
    says which, and 'no_context' when nothing relevant was found (no answer is invented).
    """
    llm = f" with {app.settings.llm_model}" if app.settings.llm_provider else ""
    progress(0, 1, f"retrieving passages and answering{llm}")
    result = answer.answer_question(
        app.store, app.embedder(), app.settings, dataset_id, query, mode=mode, top_k=top_k, temperature=temperature
    )
    return Answer.from_record(result)


def retrieve_documents(
    app: Thoth,
    dataset_id: DatasetId,
    query: Query,
    mode: Mode = "collapsed",
    top_k: TopK = 5,
    expand_k: ExpandK = 3,
) -> Hits:
    """Retrieve the passages and summaries of a dataset most relevant to a query."""
    hits = tree.retrieve(app.store, app.embedder(), dataset_id, query, mode=mode, top_k=top_k, expand_k=expand_k)
    return Hits.from_records(dataset_id, query, mode, hits)


def rag_retrieve(
    app: Thoth,
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
) -> Hits:
    """Retrieve RAPTOR tree nodes for a query, as resources raptor://{dataset_id}/nodes/{node_id}.

    Collapsed-tree search (chunks and summaries together) by default; with expand_k, a top-down
    traversal keeping expand_k nodes per level. Each resource's _meta has score, chunk_id and doc_id.
    """
    mode = "traversal" if expand_k is not None else "collapsed"
    hits = tree.retrieve(
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
    return Hits.from_records(dataset_id, query, mode, hits)


def rag_node_get(app: Thoth, node_id: NodeId) -> Node:
    """Get one tree node (a chunk or a summary): its text, level, children, parent and source."""
    return Node.from_record(tree.get_node(app.store, node_id))


def rag_node_children(app: Thoth, node_id: NodeId) -> NodeList:
    """List the children of a tree node (summaries or chunks one level down; none for a chunk)."""
    _, kids = tree.children(app.store, node_id)
    return NodeList.from_records(node_id, "children", kids)


def rag_node_navigation(
    app: Thoth,
    node_id: NodeId,
    direction: Annotated[
        Literal["parent", "siblings"], Field(description="parent: the node(s) one level up; siblings: same parent")
    ],
) -> NodeList:
    """Move from a tree node to its parent(s) or its siblings."""
    _, nodes = tree.navigate(app.store, node_id, direction)
    return NodeList.from_records(node_id, direction, nodes)


def rag_path_to_root(app: Thoth, node_id: NodeId) -> NodeList:
    """The path from a node up to the top of its tree, following each node's main parent."""
    return NodeList.from_records(node_id, "path_to_root", tree.path_to_root(app.store, node_id))


def rag_summarize(
    app: Thoth,
    node_ids: Annotated[list[str], Field(description="ids of the nodes to summarise", min_length=1, max_length=50)],
    *,
    progress: Report = silent,
) -> Summary:
    """Summarise the text of the given tree nodes (extractive, or by the LLM when one is configured)."""
    nodes = tree.nodes_by_id(app.store, node_ids)
    summariser = on_demand_summariser(app.settings, get_tokenizer(app.settings))
    progress(0, 1, f"summarising {len(nodes)} nodes ({summariser.name})")
    text = summariser.summarise([n.text for n in nodes])
    progress(1, 1, "summarised")
    return Summary(node_ids=[n.node_id for n in nodes], summary=text, summariser=summariser.name)


# What each rag_retrieve hit carries in its resource's `_meta`, beside its text.
_HIT_META = ("score", "similarity", "chunk_id", "doc_id", "level", "node_id")


def _node_resource(uri: str, text: str, meta: dict[str, Any] | None = None) -> EmbeddedResource:
    """A tree node as an embedded text resource raptor://{dataset_id}/nodes/{node_id}. `_meta` is set only
    when `meta` is given: stdio and SSE send every field that was set, a None too."""
    extra = {"_meta": meta} if meta is not None else {}
    return EmbeddedResource(
        type="resource", resource=TextResourceContents(uri=uri, mime_type="text/plain", text=text, **extra)
    )


def rag_retrieve_content(data: Hits) -> CallToolResult:
    """rag_retrieve's result: each hit a resource raptor://{dataset_id}/nodes/{node_id} with its scores."""
    content: list[TextContent | EmbeddedResource] = [
        _node_resource(h.uri, h.text, {name: getattr(h, name) for name in _HIT_META}) for h in data.results
    ]
    if not content:
        content = [TextContent(type="text", text=f"No results for {data.query!r} in dataset {data.dataset_id}.")]
    return CallToolResult(content=content, structured_content=data.model_dump(mode="json"))


def register(mcp: MCPServer, app: Thoth) -> None:
    expose(mcp, app, list_datasets, title="List datasets")
    owner = {"owner": lambda: current_caller().key}
    expose(mcp, app, create_chat_session, title="Create a chat session", annotations=WRITES, bind=owner)
    caller = {"caller": lambda: current_caller().who}
    expose(mcp, app, ingest_document, title="Ingest a document", annotations=WRITES, writer=True, bind=caller)
    expose(mcp, app, answer_question, title="Answer a question with citations")
    expose(mcp, app, retrieve_documents, title="Retrieve passages and summaries")
    expose(mcp, app, rag_retrieve, title="Retrieve tree nodes", result=rag_retrieve_content)
    expose(mcp, app, rag_node_get, title="Get a tree node")
    expose(mcp, app, rag_node_children, title="List a node's children")
    expose(mcp, app, rag_node_navigation, title="Move to parents or siblings")
    expose(mcp, app, rag_path_to_root, title="Path to the tree's root")
    expose(mcp, app, rag_summarize, title="Summarise tree nodes")

    @mcp.resource(
        RAPTOR_TEMPLATE,  # the template completion/complete answers for
        name="raptor_node",
        description="A RAPTOR tree node's text: a chunk (level 0) or a summary of the nodes below it",
        mime_type="text/plain",
    )
    def raptor_node(dataset_id: str, node_id: str) -> str:
        return answered("raptor_node", lambda: tree.get_node(app.store, node_id, source_id=dataset_id).text, "resource")


def prompts(mcp: MCPServer, app: Thoth) -> None:
    @mcp.prompt(title="Explain a topic")
    def explain_topic(
        topic: Annotated[str, Field(description="the topic to explain")],
        dataset: Annotated[str | None, Field(description="the dataset to use (list_datasets)")] = None,
    ) -> list[Message]:
        """Explain a topic from broad to specific through a dataset's RAPTOR tree (its top summaries attached)."""
        which = f'dataset_id="{dataset}"' if dataset else "a dataset_id from list_datasets"
        overview = readable.top_summaries(app.store, dataset) if dataset else []
        embedded: list[Message] = [
            UserMessage(_node_resource(node_uri(dataset or "", node_id), text)) for node_id, text in overview
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


TOOLSET = Toolset(
    "raptor",
    register,
    prompts=prompts,
    completions={("explain_topic", "dataset"): source_names},
)
