"""Agents: personas with a model and tools."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import Agent
from palaver.store.tables.core import agents, channel_agents, channel_members


def _agent(row: Any) -> Agent:
    return Agent(
        id=row.id,
        name=row.name,
        avatar=row.avatar,
        description=row.description,
        model=row.model,
        tools=list(row.tools),
        soul=row.soul,
        auto_inject_memory=bool(row.auto_inject_memory),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def name_key(name: str) -> str:
    return name.casefold()


async def get(conn: AsyncConnection, agent_id: str) -> Agent | None:
    row = (await conn.execute(select(agents).where(agents.c.id == agent_id))).first()
    return _agent(row) if row else None


async def get_many(conn: AsyncConnection, ids: list[str]) -> list[Agent]:
    if not ids:
        return []
    rows = await conn.execute(select(agents).where(agents.c.id.in_(ids)))
    by_id = {r.id: _agent(r) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


async def list_in_channels_of(conn: AsyncConnection, user_id: str) -> list[Agent]:
    """The agents of the channels the user is a member of, in creation order."""
    member_of = select(channel_members.c.channel_id).where(channel_members.c.user_id == user_id)
    in_channels = select(channel_agents.c.agent_id).where(
        channel_agents.c.channel_id.in_(member_of)
    )
    query = (
        select(agents)
        .where(agents.c.id.in_(in_channels))
        .order_by(agents.c.created_at, agents.c.id)
    )
    return [_agent(row) for row in await conn.execute(query)]


async def list_all(conn: AsyncConnection) -> list[Agent]:
    rows = await conn.execute(select(agents).order_by(agents.c.created_at, agents.c.id))
    return [_agent(r) for r in rows]


async def id_for_name(conn: AsyncConnection, name: str) -> str | None:
    row = (
        await conn.execute(select(agents.c.id).where(agents.c.name_key == name_key(name)))
    ).first()
    return row.id if row else None


async def existing_ids(conn: AsyncConnection, ids: list[str]) -> set[str]:
    if not ids:
        return set()
    rows = await conn.execute(select(agents.c.id).where(agents.c.id.in_(ids)))
    return {r.id for r in rows}


def _values(agent: Agent) -> dict[str, Any]:
    return {
        "name": agent.name,
        "name_key": name_key(agent.name),
        "avatar": agent.avatar,
        "description": agent.description,
        "model": agent.model,
        "tools": list(agent.tools),
        "soul": agent.soul,
        "auto_inject_memory": agent.auto_inject_memory,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
    }


async def create(conn: AsyncConnection, agent: Agent) -> None:
    await conn.execute(insert(agents).values(id=agent.id, **_values(agent)))


async def replace(conn: AsyncConnection, agent: Agent) -> None:
    await conn.execute(update(agents).where(agents.c.id == agent.id).values(**_values(agent)))


async def delete_agent(conn: AsyncConnection, agent_id: str) -> bool:
    result = await conn.execute(delete(agents).where(agents.c.id == agent_id))
    return result.rowcount > 0


async def count(conn: AsyncConnection) -> int:
    return int((await conn.execute(select(func.count()).select_from(agents))).scalar_one())
