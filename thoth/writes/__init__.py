"""Writing documents into the index: the ingest job (`python -m ingest`) and the server run this code.

`writer.Writer` lists a folder or bucket, a site or a repository (`listing`), plans what changed
(`runs`), parses (Markdown, text, PDF, HTML, workshop units and more: `parsers`), chunks (`chunking`),
embeds and writes a source's documents, partitions and chunks (`prepare`), then its source row and
RAPTOR tree (`tree`). The server's bucket
events (`pubsub_push`, `object_events`), workshop reindex (`runs.reingest`) and `ingest_document`
(`documents`) call it directly.
"""
