"""`thoth`: serve over HTTP or stdio, and print client configuration.

- `thoth serve` — the HTTP server (same as `python -m thoth.mcp.server`).
- `thoth serve --stdio` — MCP over stdin/stdout for local clients; nothing but protocol on stdout.
- `thoth client-config [--url URL]` — the Claude Desktop / Claude Code configuration for a server.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="thoth")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve MCP over HTTP (default) or stdio")
    serve.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout")
    config = commands.add_parser("client-config", help="print Claude Desktop / Claude Code configuration")
    config.add_argument("--url", help="MCP endpoint URL (default: this machine's server)")
    args = parser.parse_args(argv)

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

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
