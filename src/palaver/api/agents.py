"""Agents: list, read, create, change, delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from palaver.actions import agents
from palaver.api import schemas
from palaver.api.deps import Body, Caller, OwnerActing, Svc, errors, pattern
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.domain import BUILTIN_TOOLS

router = APIRouter(prefix="/api/agents", tags=["agents"], route_class=StrictJsonRoute)


AgentName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        json_schema_extra=pattern(r"^(?!\s*agent_)[\s\S]*\S"),
        description="Unique ignoring case; may not start with 'agent_', kept for ids.",
    ),
]
Tool = Annotated[
    str,
    Field(
        json_schema_extra={
            "anyOf": [
                {"enum": list(BUILTIN_TOOLS)},
                {"pattern": r"^mcp:[A-Za-z0-9_.-]+:.+$"},
            ]
        },
        description="A built-in tool, or mcp:<server>:<tool> for a configured MCP server.",
    ),
]


class AgentFields(Body):
    avatar: str | None = Field(
        default=None, json_schema_extra={"format": "emoji"}, description="A single emoji."
    )
    description: str | None = Field(default=None, max_length=2000)
    model: str | None = Field(
        default=None,
        max_length=200,
        json_schema_extra=pattern(r"^[A-Za-z0-9_.-]+/\S.*$"),
        description="<provider id>/<model name>, the provider configured (or builtin).",
    )
    tools: list[Tool] | None = None
    soul: str | None = Field(default=None, max_length=100_000)
    autoInjectMemory: bool | None = None


class CreateAgent(AgentFields):
    name: AgentName


class UpdateAgent(AgentFields):
    name: AgentName | None = None


@router.get("", responses={**errors(), **ok(schemas.AgentList, "The agents")})
async def list_agents(caller: Caller, svc: Svc) -> dict[str, Any]:
    """Every agent for the owner; a guest sees the agents of its channels."""
    found = await agents.list_visible(svc, caller.user)
    return {"agents": [a.as_list_item() for a in found]}


@router.get(
    "/{agent_id}",
    responses={**errors(404), **ok(schemas.AgentSeen, "The agent; a guest sees the list's fields")},
)
async def get_agent(agent_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    """The whole agent, SOUL.md included, for the owner; a guest gets the list item of an
    agent of its channels (never its SOUL.md), and 404 for any other."""
    agent = await agents.visible(svc, caller.user, agent_id)
    return {"agent": agent.as_json() if caller.user.is_owner else agent.as_list_item()}


@router.post("", responses={**errors(403, 409), **ok(schemas.AgentAnswer, "The new agent")})
async def create_agent(body: CreateAgent, by: OwnerActing, svc: Svc) -> dict[str, Any]:
    agent = await agents.create(svc, body.model_dump(exclude_none=True), by)
    return {"agent": agent.as_json()}


@router.put(
    "/{agent_id}",
    responses={**errors(403, 404, 409), **ok(schemas.AgentAnswer, "The changed agent")},
)
async def update_agent(
    agent_id: str, body: UpdateAgent, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    agent = await agents.update(svc, agent_id, body.model_dump(exclude_none=True), by)
    return {"agent": agent.as_json()}


@router.delete("/{agent_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")})
async def delete_agent(agent_id: str, by: OwnerActing, svc: Svc) -> dict[str, bool]:
    await agents.delete(svc, agent_id, by)
    return {"ok": True}
