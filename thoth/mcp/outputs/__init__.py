"""The tool surfaces' output models: one module per surface, each model built from records by its
`from_record` (the only place a surface's own names are applied), with the text the assistant reads
beside it (`render`)."""
