"""`python -m ingest`: the ingest job, the same command as `thoth ingest` (thoth/writes/job.py has it all;
the Cloud Run Job and older scripts call it by this name)."""

from __future__ import annotations

import sys

from thoth.freed import cap_malloc_arenas
from thoth.writes.job import main

if __name__ == "__main__":
    cap_malloc_arenas()  # as the server does: before any thread, so a long run's memory stays bounded
    sys.exit(main())
