"""A person's channel list with their read state, as the JSON `GET /api/channels` answers: one
read unit of three statements however many channels (the channels joined to the person's read
states, then every agent and every member of those channels), each row turned into JSON
straight away, with no `Channel` in between: the list of a person in 500 channels is read on
every page load and every reconnect."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Select, Text, and_, select, type_coerce

from palaver.domain import iso
from palaver.store.tables.core import channel_agents, channel_members, channels
from palaver.store.tables.reading import read_states


def listed(conn: Connection, user_id: str, everything: bool) -> list[dict[str, Any]]:
    """Every channel the person reads (`everything`: the owner's, all of them), oldest first,
    each with `lastReadId`, `unreadCount` and `mentionCount`."""
    state = read_states.alias("state")
    found: Select[Any] = select(
        channels.c.id,
        channels.c.name,
        channels.c.type,
        type_coerce(channels.c.created_at, Text),
        type_coerce(channels.c.updated_at, Text),
        state.c.last_read_id,
        state.c.unread_count,
        state.c.mention_count,
    ).outerjoin(state, and_(state.c.channel_id == channels.c.id, state.c.user_id == user_id))
    agents = select(channel_agents.c.channel_id, channel_agents.c.agent_id)
    members = select(channel_members.c.channel_id, channel_members.c.user_id)
    if not everything:
        mine = select(channel_members.c.channel_id).where(channel_members.c.user_id == user_id)
        found = found.where(channels.c.id.in_(mine))
        agents = agents.where(channel_agents.c.channel_id.in_(mine))
        members = members.where(channel_members.c.channel_id.in_(mine))
    agent_ids: dict[str, list[str]] = defaultdict(list)
    for channel_id, agent_id in conn.execute(agents.order_by(channel_agents.c.position)):
        agent_ids[channel_id].append(agent_id)
    member_ids: dict[str, list[str]] = defaultdict(list)
    for channel_id, member_id in conn.execute(members.order_by(channel_members.c.position)):
        member_ids[channel_id].append(member_id)
    return [
        {
            "id": channel_id,
            "name": name,
            "type": kind,
            "agentIds": agent_ids.get(channel_id, []),
            "memberIds": member_ids.get(channel_id, []),
            "createdAt": _iso(created),
            "updatedAt": _iso(updated),
            "lastReadId": marker,
            "unreadCount": unread or 0,
            "mentionCount": mentions or 0,
        }
        for channel_id, name, kind, created, updated, marker, unread, mentions in conn.execute(
            found.order_by(channels.c.created_at, channels.c.id)
        )
    ]


def _iso(stamp: str | datetime) -> str:
    """A time as clients see it (`domain.iso`), from the text SQLite keeps (UTC, to the
    microsecond: `2026-11-26 17:05:03.123456`) without parsing it into a datetime and back:
    half the list's time went there. PostgreSQL's driver gives a datetime."""
    if isinstance(stamp, str):
        if len(stamp) == 26 and stamp[10] == " " and stamp[19] == "." and stamp[20:].isdigit():
            return f"{stamp[:10]}T{stamp[11:23]}Z"
        stamp = datetime.fromisoformat(stamp)
    # As `UtcDateTime` reads it: a time without a zone is UTC.
    return iso(stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC))
