"""The MCP bridge: tools of the servers in `settings.mcpServers`, named `mcp:{server}:{tool}`."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types

from palaver.settings import McpServerConfig
from palaver.tools.base import Tool, ToolContext, ToolError
from palaver.tools.mcp.connection import Backoff, McpConnection

logger = logging.getLogger(__name__)

PREFIX = "mcp:"


def bridged_name(server_id: str, tool_name: str) -> str:
    return f"{PREFIX}{server_id}:{tool_name}"


def parse_bridged_name(name: str) -> tuple[str, str] | None:
    """(server id, tool name) of an `mcp:` name; the tool name may itself contain colons."""
    if not name.startswith(PREFIX):
        return None
    server_id, sep, tool_name = name[len(PREFIX) :].partition(":")
    if not sep or not server_id or not tool_name:
        return None
    return server_id, tool_name


@dataclass
class McpTool:
    """A tool of an MCP server, called through the bridge so restarts stay invisible."""

    name: str
    description: str
    parameters: dict[str, Any]
    server_id: str
    tool_name: str
    bridge: McpBridge = field(repr=False, compare=False)

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        return await self.bridge.call(self.server_id, self.tool_name, args)


class McpBridge:
    """Every configured MCP server, reached lazily; one server's trouble never blocks another.

    `get_servers` is read on every use, so an edited server restarts on its next use and a
    removed one is stopped.
    """

    def __init__(
        self,
        get_servers: Callable[[], dict[str, McpServerConfig]],
        *,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
    ) -> None:
        self._get_servers = get_servers
        self._backoff = Backoff(initial=backoff_initial, maximum=backoff_max)
        self._connections: dict[str, McpConnection] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        self._closed = False

    async def list_tools(self) -> list[Tool]:
        """The tools of every server that is or can be made ready, starting them concurrently.

        A server that fails is left out; `status()` says why.
        """
        connections = list(self._sync().values())
        listed = await asyncio.gather(*(self._ready_tools(c) for c in connections))
        return [tool for tools in listed for tool in tools]

    async def resolve(self, name: str) -> Tool | None:
        """The tool behind an `mcp:` name, starting its server if needed (within its timeout).

        While the server is down this is still a tool, with the last known schema if any,
        whose calls raise ToolError; None means no such server, or a running server without
        that tool.
        """
        parsed = parse_bridged_name(name)
        if parsed is None:
            return None
        server_id, tool_name = parsed
        connection = self._sync().get(server_id)
        if connection is None:
            return None
        try:
            await connection.session()
        except ToolError as exc:
            logger.info("resolving %s while its server is down: %s", name, exc)
        for spec in connection.tools:
            if spec.name == tool_name:
                return self._bridged(connection, spec)
        if connection.state == "ready":
            return None
        return McpTool(
            name=name,
            description=(
                f"Tool '{tool_name}' of MCP server '{server_id}', which is currently "
                f"unavailable ({connection.error or 'not started'})."
            ),
            parameters={"type": "object", "properties": {}},
            server_id=server_id,
            tool_name=tool_name,
            bridge=self,
        )

    async def call(self, server_id: str, tool_name: str, args: dict[str, Any]) -> str:
        """Call a tool and return its text; any failure is a ToolError the model can read."""
        if self._closed:
            raise ToolError("The MCP bridge has been shut down.")
        connection = self._sync().get(server_id)
        if connection is None:
            raise ToolError(
                f"MCP server '{server_id}' is not configured (add it to settings.mcpServers)."
            )
        return result_text(await connection.call(tool_name, args))

    def status(self) -> dict[str, dict[str, Any]]:
        """Per configured server: state, last error, tool count, transport, seconds to retry."""
        servers = self._get_servers()
        report: dict[str, dict[str, Any]] = {}
        for server_id, config in servers.items():
            connection = self._connections.get(server_id)
            if connection is None or connection.config != config:
                connection = McpConnection(server_id, config, self._backoff)
            report[server_id] = connection.status()
        return report

    async def aclose(self) -> None:
        """Stop every server and wait until each process and session is gone."""
        self._closed = True
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.aclose() for c in connections))
        if self._stopping:
            await asyncio.gather(*self._stopping)

    def _sync(self) -> dict[str, McpConnection]:
        """Match the connections to the current settings: stop edited and removed servers."""
        if self._closed:
            return {}
        servers = self._get_servers()
        for server_id, connection in list(self._connections.items()):
            if servers.get(server_id) != connection.config:
                del self._connections[server_id]
                self._stop_later(connection)
        for server_id, config in servers.items():
            if server_id not in self._connections:
                self._connections[server_id] = McpConnection(server_id, config, self._backoff)
        return dict(self._connections)

    def _stop_later(self, connection: McpConnection) -> None:
        logger.info("MCP server %s was changed or removed; stopping it", connection.server_id)
        task = asyncio.get_running_loop().create_task(connection.aclose())
        self._stopping.add(task)
        task.add_done_callback(self._stopped)

    def _stopped(self, task: asyncio.Task[None]) -> None:
        self._stopping.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            logger.error("stopping an MCP server failed", exc_info=exc)

    async def _ready_tools(self, connection: McpConnection) -> list[Tool]:
        try:
            await connection.session()
        except ToolError as exc:
            logger.info("leaving out the tools of MCP server %s: %s", connection.server_id, exc)
            return []
        return [self._bridged(connection, spec) for spec in connection.tools]

    def _bridged(self, connection: McpConnection, spec: mcp_types.Tool) -> McpTool:
        return McpTool(
            name=bridged_name(connection.server_id, spec.name),
            description=spec.description or spec.title or spec.name,
            parameters=dict(spec.input_schema),
            server_id=connection.server_id,
            tool_name=spec.name,
            bridge=self,
        )


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text of a tool result; an error result becomes ToolError with that text."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
            block.resource, mcp_types.TextResourceContents
        ):
            parts.append(block.resource.text)
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        else:
            parts.append(f"[{block.type} content not shown]")
    text = "\n".join(parts)
    if not parts and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    if result.is_error:
        raise ToolError(text or "The MCP tool failed without saying why.")
    return text
