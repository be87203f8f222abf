"""Tool surfaces, one module each: validate arguments, call one retrieval function, shape the result."""
