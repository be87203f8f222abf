"""Retrieval: plain functions over a Store and an Embedder (no MCP types here)."""
