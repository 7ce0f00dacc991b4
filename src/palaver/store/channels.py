"""Channels with their agent and human members, always loaded in one round of queries."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Select, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import Channel
from palaver.store.tables.core import (
    channel_agents,
    channel_members,
    channels,
    messages,
    reply_drafts,
    users,
)
from palaver.store.tables.uploads import upload_references, uploads


async def _hydrate(conn: AsyncConnection, rows: list[Any]) -> list[Channel]:
    ids = [r.id for r in rows]
    if not ids:
        return []
    agent_ids: dict[str, list[str]] = defaultdict(list)
    member_ids: dict[str, list[str]] = defaultdict(list)
    for r in await conn.execute(
        select(channel_agents)
        .where(channel_agents.c.channel_id.in_(ids))
        .order_by(channel_agents.c.position)
    ):
        agent_ids[r.channel_id].append(r.agent_id)
    for r in await conn.execute(
        select(channel_members)
        .where(channel_members.c.channel_id.in_(ids))
        .order_by(channel_members.c.position)
    ):
        member_ids[r.channel_id].append(r.user_id)
    return [
        Channel(
            id=r.id,
            name=r.name,
            type=r.type,
            agent_ids=agent_ids[r.id],
            member_ids=member_ids[r.id],
            created_at=r.created_at,
            updated_at=r.updated_at,
        )
        for r in rows
    ]


def _ordered(query: Select[Any]) -> Select[Any]:
    return query.order_by(channels.c.created_at, channels.c.id)


async def get(conn: AsyncConnection, channel_id: str) -> Channel | None:
    rows = list(await conn.execute(select(channels).where(channels.c.id == channel_id)))
    found = await _hydrate(conn, rows)
    return found[0] if found else None


async def list_all(conn: AsyncConnection) -> list[Channel]:
    return await _hydrate(conn, list(await conn.execute(_ordered(select(channels)))))


async def list_for_member(conn: AsyncConnection, user_id: str) -> list[Channel]:
    member_of = select(channel_members.c.channel_id).where(channel_members.c.user_id == user_id)
    query = _ordered(select(channels).where(channels.c.id.in_(member_of)))
    return await _hydrate(conn, list(await conn.execute(query)))


async def list_with_agent(conn: AsyncConnection, agent_id: str) -> list[Channel]:
    with_agent = select(channel_agents.c.channel_id).where(channel_agents.c.agent_id == agent_id)
    query = _ordered(select(channels).where(channels.c.id.in_(with_agent)))
    return await _hydrate(conn, list(await conn.execute(query)))


async def create(conn: AsyncConnection, channel: Channel) -> None:
    await conn.execute(
        insert(channels).values(
            id=channel.id,
            name=channel.name,
            type=channel.type,
            created_at=channel.created_at,
            updated_at=channel.updated_at,
        )
    )
    await _set_members(conn, channel)


async def replace(conn: AsyncConnection, channel: Channel) -> None:
    await conn.execute(
        update(channels)
        .where(channels.c.id == channel.id)
        .values(name=channel.name, updated_at=channel.updated_at)
    )
    await conn.execute(delete(channel_agents).where(channel_agents.c.channel_id == channel.id))
    await conn.execute(delete(channel_members).where(channel_members.c.channel_id == channel.id))
    await _set_members(conn, channel)


async def _set_members(conn: AsyncConnection, channel: Channel) -> None:
    if channel.agent_ids:
        await conn.execute(
            insert(channel_agents),
            [
                {"channel_id": channel.id, "agent_id": a, "position": i}
                for i, a in enumerate(channel.agent_ids)
            ],
        )
    if channel.member_ids:
        await conn.execute(
            insert(channel_members),
            [
                {"channel_id": channel.id, "user_id": u, "position": i}
                for i, u in enumerate(channel.member_ids)
            ],
        )


async def has_guests(conn: AsyncConnection, channel_id: str) -> bool:
    """Whether a guest can read the channel: then only what was learned there may surface."""
    query = (
        select(channel_members.c.user_id)
        .join(users, users.c.id == channel_members.c.user_id)
        .where(channel_members.c.channel_id == channel_id, users.c.role == "guest")
        .limit(1)
    )
    return (await conn.execute(query)).first() is not None


async def delete_channel(conn: AsyncConnection, channel_id: str) -> list[str]:
    """The channel goes with its messages (their versions, reactions and mentions), threads,
    replies being written, chains, schedules and read states. Answers the uploads only its
    messages named, whose records are gone (their files are the caller's to remove after the
    commit)."""
    named_here = select(upload_references.c.path).where(
        upload_references.c.channel_id == channel_id
    )
    named_elsewhere = select(upload_references.c.path).where(
        upload_references.c.channel_id != channel_id, upload_references.c.path.in_(named_here)
    )
    orphans = sorted((await conn.execute(named_here.except_(named_elsewhere))).scalars())
    if orphans:
        await conn.execute(delete(uploads).where(uploads.c.path.in_(orphans)))
    await conn.execute(delete(reply_drafts).where(reply_drafts.c.channel_id == channel_id))
    await conn.execute(delete(messages).where(messages.c.channel_id == channel_id))
    await conn.execute(delete(channels).where(channels.c.id == channel_id))
    return orphans
