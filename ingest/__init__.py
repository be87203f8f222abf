"""The ingest job: `python -m ingest --source DIR`."""
