"""Each tool surface's output models: one module per surface, the only place its own words are applied."""
