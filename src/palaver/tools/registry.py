"""The tool registry: which tools exist, which an agent may call, and calling them safely.

Every failure a tool can have (unknown, not allowed, bad arguments, an exception, a time-out)
becomes an error result the model reads; none of them ends the reply.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from palaver import strict_json
from palaver.llm.base import ToolSpec
from palaver.tools.base import Tool, ToolContext, ToolError

log = logging.getLogger(__name__)

_jsonschema_module: ModuleType | None = None


async def _jsonschema() -> ModuleType:
    """jsonschema, imported at the first tool call rather than at start (a tenth of a second),
    in a worker thread: its import reads the metaschemas from disk. Calls that come at once
    each wait in a thread of their own on the import's lock, never on the event loop."""
    global _jsonschema_module
    if _jsonschema_module is None:
        _jsonschema_module = await asyncio.to_thread(importlib.import_module, "jsonschema")
    return _jsonschema_module


class BridgedTools(Protocol):
    """Where `mcp:` tools come from (the MCP bridge)."""

    async def resolve(self, name: str) -> Tool | None: ...

    async def list_tools(self) -> list[Tool]: ...

    def status(self) -> dict[str, dict[str, Any]]: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class ToolOutcome:
    result: str
    ok: bool


class ToolRegistry:
    def __init__(self, bridged: BridgedTools | None = None) -> None:
        self._builtin: dict[str, Tool] = {}
        self._bridged = bridged

    def register(self, tool: Tool) -> None:
        self._builtin[tool.name] = tool

    @property
    def builtin_names(self) -> list[str]:
        return list(self._builtin)

    async def resolve(self, name: str) -> Tool | None:
        if name in self._builtin:
            return self._builtin[name]
        if name.startswith("mcp:") and self._bridged is not None:
            return await self._bridged.resolve(name)
        return None

    async def specs(self, names: Sequence[str]) -> list[ToolSpec]:
        """The specs of the named tools that exist now; an agent's unknown tools are left out."""
        tools = await asyncio.gather(*(self.resolve(n) for n in names))
        return [ToolSpec(t.name, t.description, t.parameters) for t in tools if t is not None]

    async def catalogue(self) -> tuple[list[Tool], dict[str, dict[str, Any]]]:
        """Every tool an agent can be given, and the state of each MCP server."""
        tools = list(self._builtin.values())
        if self._bridged is None:
            return tools, {}
        return tools + await self._bridged.list_tools(), self._bridged.status()

    async def aclose(self) -> None:
        """Release what tools hold (HTTP clients, MCP server processes)."""
        for tool in self._builtin.values():
            close = getattr(tool, "aclose", None)
            if close is not None:
                await close()
        if self._bridged is not None:
            await self._bridged.aclose()

    async def call(
        self,
        ctx: ToolContext,
        allowed: Sequence[str],
        name: str,
        raw_arguments: str,
        time_limit: float,
    ) -> ToolOutcome:
        if name not in allowed:
            return ToolOutcome(f"Error: the tool '{name}' is not available to this agent.", False)
        tool = await self.resolve(name)
        if tool is None:
            return ToolOutcome(f"Error: there is no tool named '{name}'.", False)
        try:
            args = strict_json.loads(raw_arguments) if raw_arguments.strip() else {}
        except ValueError as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            return ToolOutcome(f"Error: the arguments are not valid JSON ({reason}).", False)
        if not isinstance(args, dict):
            return ToolOutcome("Error: the arguments must be a JSON object.", False)
        jsonschema = await _jsonschema()
        try:
            jsonschema.validate(args, tool.parameters)
        except jsonschema.ValidationError as exc:
            return ToolOutcome(f"Error: invalid arguments: {exc.message}.", False)
        except jsonschema.SchemaError:
            log.warning("tool %s has an invalid schema; calling it unchecked", name)
        return await _run(tool, ctx, args, time_limit)


async def _run(
    tool: Tool, ctx: ToolContext, args: dict[str, Any], time_limit: float
) -> ToolOutcome:
    try:
        async with asyncio.timeout(time_limit):
            return ToolOutcome(await tool(ctx, args), True)
    except TimeoutError:
        return ToolOutcome(
            f"Error: the tool '{tool.name}' timed out after {time_limit:g} s.", False
        )
    except ToolError as exc:
        return ToolOutcome(f"Error: {exc}", False)
    except Exception as exc:
        log.exception("tool %s failed", tool.name)
        return ToolOutcome(f"Error: the tool '{tool.name}' failed ({type(exc).__name__}).", False)
