"""Tool surfaces' output models: one module per surface, built from records (`from_record`), with the text
the assistant reads beside them (`render`)."""
