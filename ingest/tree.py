"""Moved to thoth.writes.tree (the core: the server's ingest_document writes through it too).

This old name is the same module object, so the job's callers and tests that import it keep working.
"""

import sys

from thoth.writes import tree

sys.modules[__name__] = tree
