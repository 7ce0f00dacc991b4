"""Tools agents may call: the port, the registry, built-ins and the MCP bridge."""
