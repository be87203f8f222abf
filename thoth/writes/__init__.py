"""Writing documents into the index, run by the ingest job and the server (docs/architecture.md, thoth/writes)."""
