"""The MCP server: Starlette app (server.py), tool registration (tools.py), tool surfaces (toolsets/)."""
