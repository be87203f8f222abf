"""`thoth`: one command for the index, beside the MCP server (`thoth --help`; docs/agents.md shows it in use).

The reading commands print text for people, or with `--json` the tool's structured output (the shape the
MCP tools give, stable for scripts and agents). Exit codes: 0 done; 1 the index could not be read or the
command failed (`status`: the index is not healthy); 2 bad arguments or settings.
"""

from __future__ import annotations

import argparse
import json
import sys

from thoth.config import ConfigError, Settings


def client_config(url: str) -> str:
    desktop = {"mcpServers": {"thoth": {"command": "npx", "args": ["-y", "mcp-remote", url]}}}
    desktop_stdio = {
        "mcpServers": {"thoth": {"command": sys.executable, "args": ["-m", "thoth.cli", "serve", "--stdio"]}}
    }
    return "\n".join(
        [
            f"MCP endpoint: {url}",
            "",
            "Claude Code:",
            f"  claude mcp add --transport http thoth {url}",
            "",
            "Claude Desktop (claude_desktop_config.json), through the mcp-remote bridge:",
            json.dumps(desktop, indent=2),
            "",
            "Claude Desktop over stdio (no server needed; run from this checkout, THOTH_DB_URI as for the server):",
            json.dumps(desktop_stdio, indent=2),
        ]
    )


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thoth", description="Thoth: an MCP retrieval server and its index.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("ingest", help="ingest a folder or bucket prefix (thoth ingest --help)", add_help=False)
    search = commands.add_parser("search", help="search the index: cited hits")
    search.add_argument("query")
    search.add_argument("--source", help="one collection (default: all)")
    search.add_argument("-k", type=int, default=5, help="hits to return (1-50; default 5)")
    commands.add_parser("sources", help="list the collections")
    documents = commands.add_parser("documents", help="list one collection's files")
    documents.add_argument("source")
    documents.add_argument("--limit", type=int, default=200, help="files to list (default 200)")
    commands.add_parser("status", help="health, tables, model and the latest ingest runs")
    evaluate = commands.add_parser("eval", help="recall@k and MRR of your own questions, misses listed")
    evaluate.add_argument("questions", help='JSON Lines: {"question": ..., "expected": [file, ...]}')
    evaluate.add_argument("--source", help="the collection to search when a question names none")
    evaluate.add_argument("-k", type=int, default=5, help="hits per question (default 5)")
    evaluate.add_argument("--fail-under", type=float, help="exit 1 when recall@k is below this")
    for name in ("search", "sources", "documents", "status", "eval"):
        commands.choices[name].add_argument("--json", action="store_true", help="print JSON (a stable shape)")
    serve = commands.add_parser("serve", help="serve MCP over HTTP (default) or stdio")
    serve.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout")
    config = commands.add_parser("client-config", help="print Claude Desktop / Claude Code configuration")
    config.add_argument("--url", help="MCP endpoint URL (default: this machine's server)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args, rest = parser().parse_known_args(argv)
    if args.command == "ingest":
        from thoth.freed import cap_malloc_arenas
        from thoth.writes.job import main as ingest

        cap_malloc_arenas()  # as the server does: before any thread, so a long run's memory stays bounded
        return ingest(rest, prog="thoth ingest")
    if rest:
        parser().parse_args(argv)  # exits 2 naming the unknown arguments

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if args.command in ("search", "sources", "documents", "status", "eval"):
        from thoth.cli_read import read

        return read(settings, args)
    if args.command == "client-config":
        print(client_config(args.url or f"http://{settings.host}:{settings.port}/mcp"))
        return 0
    if args.stdio:
        from thoth.app import Thoth
        from thoth.logs import setup_logging
        from thoth.mcp.tools import build_mcp

        setup_logging(settings)  # logs go to stderr; stdout carries only the protocol
        app = Thoth(settings)
        app.warm_up(background=True)
        build_mcp(app).run(transport="stdio")
        return 0
    from thoth.mcp.server import main as serve_http

    serve_http()
    return 0


if __name__ == "__main__":
    sys.exit(main())
