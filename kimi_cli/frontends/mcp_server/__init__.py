"""`kimi mcp serve`: kimi as an MCP server (docs/sdk.md#kimi-mcp-serve)."""
