"""The MCP bridge, loaded on first need: the `mcp` SDK takes a second or more to import,
which every start-up would pay even where no MCP server is configured."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import Any

import anyio

from palaver.settings import McpServerConfig
from palaver.tools.base import Tool
from palaver.tools.registry import BridgedTools


class LazyMcpBridge:
    def __init__(self, get_servers: Callable[[], dict[str, McpServerConfig]]) -> None:
        self._get_servers = get_servers
        self._bridge: BridgedTools | None = None
        self._lock = asyncio.Lock()

    async def _loaded(self) -> BridgedTools:
        async with self._lock:
            if self._bridge is None:
                module = await anyio.to_thread.run_sync(
                    importlib.import_module, "palaver.tools.mcp"
                )
                self._bridge = module.McpBridge(self._get_servers)
        return self._bridge

    async def resolve(self, name: str) -> Tool | None:
        return await (await self._loaded()).resolve(name)

    async def list_tools(self) -> list[Tool]:
        if self._bridge is None and not self._get_servers():
            return []
        return await (await self._loaded()).list_tools()

    def status(self) -> dict[str, dict[str, Any]]:
        return self._bridge.status() if self._bridge is not None else {}

    async def aclose(self) -> None:
        if self._bridge is not None:
            await self._bridge.aclose()
