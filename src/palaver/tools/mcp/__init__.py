"""Tools bridged from MCP servers, reached with the official `mcp` SDK."""

from palaver.tools.mcp.bridge import McpBridge, McpTool, bridged_name, parse_bridged_name

__all__ = ["McpBridge", "McpTool", "bridged_name", "parse_bridged_name"]
