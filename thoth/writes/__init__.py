"""Writing documents into the index, shared by the ingest job and the server's `ingest_document`.

`writer.Writer` parses (Markdown and plain text: `parsers`), chunks (`chunking`), embeds and writes
a source's documents, partitions and chunks, then its source row and RAPTOR tree (`tree`). The ingest
job (`ingest/`) adds PDFs, workshop repositories and whole runs over a folder or bucket on top of it;
`jobs` is how the server hands the job a bucket event or a reindex without importing it.
"""
