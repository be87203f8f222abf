"""`python -m ingest --source DIR [--db URI] [--name NAME]`.

Exit codes: 0 the run finished (files that could not be read are recorded and
listed, and do not change the code); 1 the run could not happen (source or
database unreachable, embedding model mismatch); 2 bad arguments or settings.
"""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from ingest.pipeline import Ingestor, log_progress
from ingest.sources import SourceError
from thoth.config import ConfigError, Settings
from thoth.embed import EmbedderUnavailable
from thoth.logs import setup_logging
from thoth.store import StoreError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ingest", description="Ingest a folder into Thoth's index.")
    parser.add_argument("--source", required=True, help="folder of Markdown (.md, .mdx), PDF and .txt files")
    parser.add_argument("--db", help="database URI (folder or gs://bucket/prefix); default THOTH_DB_URI")
    parser.add_argument("--name", help="source name (default: the folder's name); its slug is the source id")
    args = parser.parse_args(argv)

    try:
        settings = Settings.from_env(**({"db_uri": args.db} if args.db else {}))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings)

    bar = tqdm(unit="file", disable=None) if sys.stderr.isatty() else None

    def progress(done: int, total: int, key: str) -> None:
        if bar is None:
            log_progress(done, total, key)
            return
        bar.total = total
        bar.set_postfix_str(key[-40:], refresh=False)
        bar.update(done - bar.n)

    try:
        summary = Ingestor(settings).run(args.source, name=args.name, progress=progress)
    except (SourceError, StoreError, EmbedderUnavailable, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if bar is not None:
            bar.close()
    print(summary.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
