"""Mentions of people and agents: found in a message against its channel's members, listed in
its metadata (`mentions`), and, once it is stored, told to each person it mentions on every
socket of theirs, subscribed to the channel or not. Shared by people's posts and agents'
replies."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.agents.mentions import mentioned_members, mentions_metadata
from palaver.bus.base import user_topic
from palaver.domain import Channel, Message
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import users as users_store
from palaver.store.read_states import mentioned_people

MENTIONS = "mentions"
"""The metadata key: `{userIds, agentIds}`, set by the server only (a client's is dropped)."""


async def with_mentions(
    conn: AsyncConnection, channel: Channel, metadata: dict[str, Any], content: str
) -> dict[str, Any]:
    """`metadata` with the mentions of `content` among the channel's members (people who can
    read it, and its agents); without the key when it mentions nobody."""
    found: dict[str, Any] = {k: v for k, v in metadata.items() if k != MENTIONS}
    if "@" not in content:
        return found
    agents = await agents_store.get_many(conn, channel.agent_ids)
    people = await users_store.get_many(conn, channel.member_ids)
    named_agents, named_people = mentioned_members(content, agents, people)
    if named_agents or named_people:
        found[MENTIONS] = mentions_metadata(named_agents, named_people)
    return found


async def tell_mentioned(
    svc: Services, message: Message, people: Iterable[str] | None = None
) -> None:
    """After the commit: each person mentioned (or only `people`, those an edit newly names)
    hears `mention` on all their sockets."""
    data = {
        "messageId": message.id,
        "channelId": message.channel_id,
        "threadId": message.thread_id,
        "from": message.user_id or message.agent_id,
    }
    for user_id in mentioned_people(message) if people is None else people:
        await svc.bus.publish(user_topic(user_id), {"type": "mention", "data": data})
