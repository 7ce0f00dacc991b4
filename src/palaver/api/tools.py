"""The tools an agent can be given."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from palaver.api import schemas
from palaver.api.deps import Owner, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api", tags=["agents"], route_class=StrictJsonRoute)


@router.get(
    "/tools", responses={**errors(403), **ok(schemas.ToolList, "The tools and MCP servers")}
)
async def list_tools(_: Owner, svc: Svc) -> dict[str, Any]:
    """Built-in and MCP-bridged tools with their schemas, and the state of each MCP server.
    Owner only: the servers' names, states and errors are the owner's configuration."""
    tools, servers = await svc.tools.catalogue()
    return {
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "source": "mcp" if t.name.startswith("mcp:") else "builtin",
            }
            for t in tools
        ],
        "mcpServers": servers,
    }
