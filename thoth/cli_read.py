"""`thoth search`, `sources`, `documents` and `status`: the index read from a terminal through the research
surface's tool functions, so `--json` prints a tool's structured output (thoth/cli.py parses)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from thoth.app import Thoth
from thoth.config import Settings
from thoth.errors import ClientError, ThothError
from thoth.writes.run_records import describe, to_json

RECENT_RUNS = 10  # the runs `thoth status` lists: the latest of a few sources on one screen
MAX_K = 50  # the `search` tool's own bound on top_k


def _print(value: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(value.model_dump(mode="json") if hasattr(value, "model_dump") else value, indent=2))
    else:
        print(value.render() if hasattr(value, "render") else value)


def status(app: Thoth, as_json: bool) -> int:
    health = app.health()
    try:
        runs = app.store.recent_runs(limit=RECENT_RUNS)
    except ThothError:  # an unreadable index: the health report says why
        runs = []
    if as_json:
        _print({**health.to_json(), "runs": [to_json(run) for run in runs]}, True)
    else:
        body = health.to_json()
        lines = [f"status: {health.status}" + (f" ({health.reason})" if health.reason else "")]
        lines.append(f"model: {health.embed_model} (index built with {body.get('index_model') or '-'})")
        for name, rows in sorted((health.tables or {}).items()):
            version = (health.table_versions or {}).get(name, "-")
            lines.append(f"  {name:<12} {rows:>9} rows  version {version}")
        lines.append("latest ingest runs:" if runs else "no ingest runs recorded yet")
        lines += [f"  {describe(run)}" for run in runs]
        lines += [f"    failed: {failure}" for run in runs[:1] for failure in run.failures]
        print("\n".join(lines))
    return 0 if health.ok else 1


def read(settings: Settings, args: argparse.Namespace) -> int:
    """Run one reading command; its exit code."""
    from thoth.mcp.toolsets import research  # the tool functions, as the server calls them

    app = Thoth(settings)
    try:
        if not 1 <= getattr(args, "k", 1) <= MAX_K:  # search's and eval's k
            raise ClientError(f"-k must be from 1 to {MAX_K}")
        if args.command == "status":
            return status(app, args.json)
        if args.command == "eval":
            from thoth.cli_eval import evaluate

            return evaluate(app, args)
        if args.command == "sources":
            _print(research.list_collections(app), args.json)
        elif args.command == "documents":
            _print(research.list_collection_files(app, collection=args.source, limit=args.limit), args.json)
        else:
            _print(research.search(app, args.query, top_k=args.k, collection=args.source), args.json)
    except ClientError as exc:  # a bad argument: an unknown source, a k out of range
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ThothError as exc:  # the index or the model could not be read
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
