"""Each tool surface's output models: built from records, rendered as the text the assistant reads."""
