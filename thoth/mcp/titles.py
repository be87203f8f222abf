"""Human titles for every tool, in one place: clients show them instead of the snake_case name.

A tool registered without a title gets its title here as it is registered (thoth.mcp.lazy_tools),
so a toolset never repeats them; a test checks that every registered tool has one (a new tool
needs a line here).
"""

from __future__ import annotations

TITLES: dict[str, str] = {
    # handbook
    "search_handbook": "Search the handbook",
    "list_topics": "List handbook topics",
    # qurio
    "qurio_search": "Search all documentation",
    "qurio_list_sources": "List documentation sources",
    "qurio_list_pages": "List pages of a source",
    "qurio_read_page": "Read a page",
    # workshop
    "list_workshops": "List workshops",
    "retrieve_learning_context": "Get workshop learning context",
    "retrieve_diff_context": "Get problem-to-solution diffs",
    "search_topic_context": "Search workshop content",
    "retrieve_quiz_instructions": "Get the quiz protocol",
    # research
    "ping": "Check the index",
    "list_collections": "List collections",
    "set_default_collection": "Set the default collection",
    "list_collection_files": "List files of a collection",
    "search": "Search the research library",
    "fetch": "Fetch a chunk",
    "resolve_citation": "Open a citation",
    "fetch_document_chunks": "Read a document's chunks",
    "fetch_chunk_document": "Get a chunk's document",
    "fetch_chunk_partition": "Get a chunk's page or section",
    "fetch_chunk_bibtex": "Get a BibTeX entry",
    # raptor
    "list_datasets": "List datasets",
    "create_chat_session": "Create a chat session",
    "ingest_document": "Ingest a document",
    "answer_question": "Answer a question with citations",
    "retrieve_documents": "Retrieve passages and summaries",
    "rag_retrieve": "Retrieve tree nodes",
    "rag_node_get": "Get a tree node",
    "rag_node_children": "List a node's children",
    "rag_node_navigation": "Move to parents or siblings",
    "rag_path_to_root": "Path to the tree's root",
    "rag_summarize": "Summarise tree nodes",
    # always there
    "list_tools": "List tools",
}
