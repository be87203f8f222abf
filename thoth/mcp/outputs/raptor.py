"""The RAPTOR surface's outputs (docs/raptor.md): a source is a `dataset`, a chunk's document key its `source`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from thoth.mcp.outputs import Flagged, Output, from_fields
from thoth.records import Session as SessionRecord
from thoth.records import TreeNode
from thoth.retrieval import answer as answers
from thoth.retrieval.sources import SourceListing
from thoth.retrieval.tree import NodeHit


def node_uri(dataset_id: str, node_id: str) -> str:
    return f"raptor://{dataset_id}/nodes/{node_id}"


def excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Dataset(Output):
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

    @classmethod
    def from_record(cls, tree: SourceListing) -> Dataset:
        source = tree.source
        return from_fields(
            cls,
            tree,
            source,
            id=source.source_id,
            documents=source.document_count or 0,
            chunks=source.chunk_count or 0,
            tree_levels=tree.levels,
            tree_nodes=tree.nodes,
            updated_at=source.updated_at.isoformat() if source.updated_at else None,
        )

    def render(self) -> str:
        shape = f"tree of {self.tree_nodes} summary nodes in {self.tree_levels} levels" if self.has_tree else "no tree"
        return f"- {self.id} ({self.kind}): {self.documents} documents, {self.chunks} chunks, " + shape


class DatasetList(Output):
    datasets: list[Dataset]

    def render(self) -> str:
        return "Available datasets:\n" + ("\n".join(d.render() for d in self.datasets) or "(none)")


class Session(Output):
    session_id: str
    dataset_id: str
    title: str
    created_at: str

    @classmethod
    def from_record(cls, session: SessionRecord) -> Session:
        created = session.created_at.isoformat() if session.created_at else ""
        return cls(session_id=session.session_id, dataset_id=session.source_id, title=session.title, created_at=created)

    def render(self) -> str:
        return (
            f"Successfully created chat session {self.session_id} for dataset {self.dataset_id} "
            f"with title '{self.title}'"
        )


class Ingested(Output):
    dataset_id: str
    doc_id: str
    key: str = Field(description="the document's path inside the dataset")
    status: Literal["ingested", "unchanged", "started"]
    chunks: int
    tree: str | None = Field(description="what the tree update did")
    run_id: str | None = Field(
        default=None, description="a long text is ingested by a run of its own: follow it with get_run"
    )

    def render(self) -> str:
        if self.status == "started":
            return (
                f"Started ingesting the document into dataset {self.dataset_id} (document ID {self.doc_id}) as run "
                f"{self.run_id}: follow it with get_run."
            )
        return (
            f"Successfully ingested document into dataset {self.dataset_id}. Document ID: {self.doc_id}, "
            f"Chunks: {self.chunks}" + (f" ({self.status})" if self.status == "unchanged" else "")
        )


class Node(Output):
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

    @classmethod
    def from_record(cls, node: TreeNode) -> Node:
        return from_fields(cls, node, **_node_fields(node))

    def label(self) -> str:
        if self.level == 0:
            where = f"{self.source} > {self.section}" if self.section else self.source
            return f"chunk {self.node_id} ({where})"
        return f"level-{self.level} summary {self.node_id} ({self.leaf_count} chunks)"

    def render(self) -> str:
        return f"Node metadata: {self.model_dump(exclude={'text'})}\n\n{self.text}"


def _node_fields(node: TreeNode) -> dict:
    """Node's fields in the surface's names; the rest (level, text, parent, section...) are the node's own."""
    return {
        "dataset_id": node.source_id,
        "uri": node_uri(node.source_id, node.node_id),
        "leaf_count": node.leaf_count or 1,
        "source": node.key,
    }


class Hit(Node, Flagged):
    rank: int
    score: float = Field(description="rank score: fused (collapsed) or cosine similarity (traversal)")
    similarity: float | None = Field(description="cosine similarity of the query and the node")

    @classmethod
    def from_hit(cls, rank: int, hit: NodeHit) -> Hit:
        similarity = hit.similarity
        return from_fields(
            cls,
            hit.node,
            **_node_fields(hit.node),
            rank=rank,
            score=round(float(hit.score), 6),
            similarity=round(float(similarity), 4) if similarity is not None else None,
            flags=cls.flags_of(hit.node.text),
        )

    def render(self) -> str:
        return f"{self.rank}. {self.label()} score {self.score:.3f}\n{self.flag_note()}{excerpt(self.text, 600)}"


class Hits(Output):
    dataset_id: str
    query: str
    mode: str
    results: list[Hit]

    @classmethod
    def from_records(cls, dataset_id: str, query: str, mode: str, hits: list[NodeHit]) -> Hits:
        results = [Hit.from_hit(rank, hit) for rank, hit in enumerate(hits, start=1)]
        return cls(dataset_id=dataset_id, query=query, mode=mode, results=results)

    def render(self) -> str:
        lines = [h.render() for h in self.results]
        return "Retrieved documents:\n\n" + ("\n\n".join(lines) or f"no results for {self.query!r}")


class NodeList(Output):
    node_id: str
    relation: str
    nodes: list[Node]

    @classmethod
    def from_records(cls, node_id: str, relation: str, nodes: list[TreeNode]) -> NodeList:
        return cls(node_id=node_id, relation=relation, nodes=[Node.from_record(n) for n in nodes])

    def render_list(self, title: str) -> str:
        if not self.nodes:
            return f"{title}: none"
        return f"{title}:\n" + "\n".join(f"- {n.label()}: {excerpt(n.text, 200)}" for n in self.nodes)

    def render(self) -> str:
        if self.relation == "children":
            return self.render_list("Child nodes")
        if self.relation == "path_to_root":
            path = "Path to root: " + " -> ".join(f"level {n.level} {n.node_id}" for n in self.nodes)
            return path + "\n\n" + self.render_list("Nodes")
        return self.render_list(self.relation.capitalize())


class Citation(Output):
    number: int
    node_id: str
    uri: str
    level: int
    source: str | None
    section: str | None
    source_ref: str | None
    similarity: float
    text: str

    @classmethod
    def from_record(cls, dataset_id: str, citation: answers.Citation) -> Citation:
        node = citation.node
        return from_fields(cls, citation, node, uri=node_uri(dataset_id, node.node_id), source=node.key)

    def render(self) -> str:
        where = (self.source or f"level-{self.level} summary") + (f" > {self.section}" if self.section else "")
        return f"[{self.number}] {where} ({self.uri}): {excerpt(self.text)}"


class Answer(Output):
    dataset_id: str
    query: str
    mode: str
    answer: str
    answer_type: Literal["extractive", "generated", "no_context"]
    model: str | None = Field(description="the LLM that wrote a generated answer")
    citations: list[Citation]

    @classmethod
    def from_record(cls, answer: answers.Answer) -> Answer:
        citations = [Citation.from_record(answer.source_id, c) for c in answer.citations]
        return from_fields(cls, answer, dataset_id=answer.source_id, citations=citations)

    def render(self) -> str:
        kind = f"generated by {self.model}" if self.answer_type == "generated" else self.answer_type
        context = "\n".join(c.render() for c in self.citations)
        return f"Answer ({kind}): {self.answer}\n\nContext:\n{context or '(none)'}"


class Summary(Output):
    node_ids: list[str]
    summary: str
    summariser: str

    def render(self) -> str:
        return self.summary
