"""Agents: validation of what defines them (name, avatar, model, tools) and their lifecycle."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from palaver.actions.channel_events import tell_people
from palaver.bus.base import CONTROL
from palaver.domain import BUILTIN_TOOLS, Agent, User
from palaver.emoji_rule import one_emoji
from palaver.errors import Conflict, Invalid, NotFound
from palaver.ids import new_id
from palaver.services import Services
from palaver.settings import model_problem, well_formed_model
from palaver.store import agents, channels
from palaver.store.audit import Actor, text_size
from palaver.store.tables.base import utcnow

DEFAULT_AVATAR = "🤖"
_MCP_TOOL = re.compile(r"^mcp:([A-Za-z0-9_.-]+):(.+)$")


def _check_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= 64:
        raise Invalid("An agent's name must be 1 to 64 characters.", field="name")
    if name.startswith("agent_"):
        raise Invalid(
            "An agent's name may not start with 'agent_', which is kept for ids.", field="name"
        )
    return name


def _check_avatar(avatar: str) -> str:
    if not one_emoji(avatar):
        raise Invalid("The avatar must be a single emoji.", field="avatar")
    return avatar


def _check_model(svc: Services, model: str) -> str:
    """A model naming a provider the settings lack conflicts with them: 409, not 400."""
    problem = model_problem(svc.settings.current, model)
    if problem is not None:
        raise (Conflict if well_formed_model(model) else Invalid)(problem, field="model")
    return model


def _check_tools(svc: Services, tools: list[str]) -> list[str]:
    for tool in tools:
        if tool in BUILTIN_TOOLS:
            continue
        match = _MCP_TOOL.match(tool)
        if match is None:
            raise Invalid(f"Unknown tool '{tool}'.", field="tools")
        if match.group(1) not in svc.settings.current.mcpServers:
            raise Conflict(
                f"Unknown tool '{tool}': no MCP server '{match.group(1)}' is configured.",
                field="tools",
            )
    return list(dict.fromkeys(tools))


async def get(svc: Services, agent_id: str) -> Agent:
    async with svc.db.read() as conn:
        agent = await agents.get(conn, agent_id)
    if agent is None:
        raise NotFound(f"No agent has the id '{agent_id}'.")
    return agent


async def list_visible(svc: Services, user: User) -> list[Agent]:
    """Every agent for the owner; for a guest, the agents of its channels."""
    async with svc.db.read() as conn:
        if user.is_owner:
            return await agents.list_all(conn)
        return await agents.list_in_channels_of(conn, user.id)


async def visible(svc: Services, user: User, agent_id: str) -> Agent:
    """The agent, or NotFound: a guest cannot tell an agent outside its channels from a
    missing one."""
    if user.is_owner:
        return await get(svc, agent_id)
    found = [a for a in await list_visible(svc, user) if a.id == agent_id]
    if not found:
        raise NotFound(f"No agent has the id '{agent_id}'.")
    return found[0]


def _audited(agent: Agent) -> dict[str, Any]:
    """An agent's fields as the audit log keeps them: SOUL.md by its length only."""
    return {
        "name": agent.name,
        "avatar": agent.avatar,
        "description": agent.description,
        "model": agent.model,
        "tools": agent.tools,
        "soul": text_size(agent.soul),
        "autoInjectMemory": agent.auto_inject_memory,
    }


def _changed(before: Agent, after: Agent) -> dict[str, Any]:
    old, new = _audited(before), _audited(after)
    if before.soul != after.soul:
        old["soul"] = None
    return {k: v for k, v in new.items() if old[k] != v}


async def create(svc: Services, fields: dict[str, Any], by: Actor) -> Agent:
    now = utcnow()
    agent = Agent(
        id=new_id("agent"),
        name=_check_name(fields["name"]),
        avatar=_check_avatar(fields.get("avatar", DEFAULT_AVATAR)),
        description=fields.get("description") or "",
        model=_check_model(svc, fields.get("model", svc.settings.current.defaultModel)),
        tools=_check_tools(svc, fields.get("tools") or []),
        soul=fields.get("soul") or "",
        auto_inject_memory=fields.get("autoInjectMemory", True),
        created_at=now,
        updated_at=now,
    )
    async with svc.db.write() as tx:
        if await agents.id_for_name(tx.conn, agent.name) is not None:
            raise Conflict(f"An agent named '{agent.name}' exists already.", field="name")
        await agents.create(tx.conn, agent)
        await by.add(tx.conn, "agent.create", agent.id, _audited(agent))
    return agent


async def update(svc: Services, agent_id: str, fields: dict[str, Any], by: Actor) -> Agent:
    changes: dict[str, Any] = {}
    if fields.get("name") is not None:
        changes["name"] = _check_name(fields["name"])
    if fields.get("avatar") is not None:
        changes["avatar"] = _check_avatar(fields["avatar"])
    if fields.get("description") is not None:
        changes["description"] = fields["description"]
    if fields.get("model") is not None:
        changes["model"] = _check_model(svc, fields["model"])
    if fields.get("tools") is not None:
        changes["tools"] = _check_tools(svc, fields["tools"])
    if fields.get("soul") is not None:
        changes["soul"] = fields["soul"]
    if fields.get("autoInjectMemory") is not None:
        changes["auto_inject_memory"] = fields["autoInjectMemory"]
    async with svc.db.write() as tx:
        agent = await agents.get(tx.conn, agent_id)
        if agent is None:
            raise NotFound(f"No agent has the id '{agent_id}'.")
        if "name" in changes:
            holder = await agents.id_for_name(tx.conn, changes["name"])
            if holder is not None and holder != agent_id:
                raise Conflict(f"An agent named '{changes['name']}' exists already.", field="name")
        updated = replace(agent, **changes, updated_at=utcnow())
        await agents.replace(tx.conn, updated)
        changed = _changed(agent, updated)
        if changed:
            await by.add(tx.conn, "agent.update", agent_id, changed)
    return updated


async def delete(svc: Services, agent_id: str, by: Actor) -> None:
    """The agent goes, and the people of its channels hear `channel_updated` without it."""
    async with svc.db.write() as tx:
        holding = await channels.list_with_agent(tx.conn, agent_id)
        agent = await agents.get(tx.conn, agent_id)
        if agent is None or not await agents.delete_agent(tx.conn, agent_id):
            raise NotFound(f"No agent has the id '{agent_id}'.")
        await by.add(tx.conn, "agent.delete", agent_id, {"name": agent.name})
        await svc.index.drop_agent(tx, agent_id)
        tx.on_commit(
            lambda: svc.bus.publish(CONTROL, {"type": "agent_deleted", "agentId": agent_id})
        )
    for before in holding:
        after = replace(before, agent_ids=[a for a in before.agent_ids if a != agent_id])
        await tell_people(svc, before, after)
