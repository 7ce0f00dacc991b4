"""Channels: who may see them, and how their members change."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from palaver.actions.channel_events import tell_access_changed, tell_people
from palaver.actions.erasing import erase_soon, remove_upload_files
from palaver.bus.base import CONTROL
from palaver.domain import Channel, ChannelType, User
from palaver.errors import Forbidden, Invalid, NotFound
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import agents, channel_list, channels, messages, read_states, users
from palaver.store.audit import Actor
from palaver.store.db import Tx
from palaver.store.tables.base import utcnow


def can_see(user: User, channel: Channel) -> bool:
    return user.is_owner or user.id in channel.member_ids


async def visible(svc: Services, user: User, channel_id: str) -> Channel:
    """The channel, or NotFound: a guest cannot tell a hidden channel from a missing one."""
    channel = svc.caches.channels.get(channel_id)
    if channel is None:
        generation = svc.caches.channels.generation
        async with svc.db.read() as conn:
            channel = await channels.get(conn, channel_id)
        if channel is not None:
            svc.caches.channels.put(channel_id, channel, generation)
    if channel is None or not can_see(user, channel):
        raise NotFound(f"No channel has the id '{channel_id}'.")
    return channel


async def list_visible(svc: Services, user: User) -> list[Channel]:
    async with svc.db.read() as conn:
        if user.is_owner:
            return await channels.list_all(conn)
        return await channels.list_for_member(conn, user.id)


async def list_with_read_state(svc: Services, user: User) -> list[dict[str, Any]]:
    """The channels the user sees, each with the user's marker and counts (kept by the writes,
    see `read_states`), in one read hop."""
    return await svc.db.read_unit(lambda conn: channel_list.listed(conn, user.id, user.is_owner))


async def unread(
    svc: Services, user: User, after: dict[str, str | None], cap: int
) -> dict[str, dict[str, Any]]:
    """Unread counts for the channels named that the user may see, in one read; a channel the
    user may not see is left out, as one that does not exist."""
    seen = {c.id for c in await list_visible(svc, user)}
    wanted = {cid: since for cid, since in after.items() if cid in seen}
    counted = await svc.db.read_unit(lambda conn: messages.unread(conn, wanted, user.id, cap))
    return {cid: {"count": n, "newestId": newest} for cid, (n, newest) in counted.items()}


def _dedupe(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


async def _check_ids(tx: Tx, agent_ids: list[str], member_ids: list[str]) -> None:
    known_agents = await agents.existing_ids(tx.conn, agent_ids)
    for agent_id in agent_ids:
        if agent_id not in known_agents:
            raise NotFound(f"No agent has the id '{agent_id}'.")
    known_users = await users.existing_ids(tx.conn, member_ids)
    for user_id in member_ids:
        if user_id not in known_users:
            raise NotFound(f"No user has the id '{user_id}'.")


def _check_shape(kind: ChannelType, agent_ids: list[str]) -> None:
    if kind == "dm" and len(agent_ids) != 1:
        raise Invalid("A dm channel has exactly one agent.")


def _check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > 128:
        raise Invalid("A channel's name must be 1 to 128 characters.")
    return name


def _audited(channel: Channel) -> dict[str, Any]:
    return {
        "name": channel.name,
        "type": channel.type,
        "agentIds": channel.agent_ids,
        "memberIds": channel.member_ids,
    }


async def create(
    svc: Services,
    name: str,
    kind: ChannelType,
    agent_ids: list[str],
    member_ids: list[str],
    by: Actor,
) -> Channel:
    agent_ids = _dedupe(agent_ids)
    member_ids = _dedupe([svc.owner_id, *member_ids])
    _check_shape(kind, agent_ids)
    now = utcnow()
    channel = Channel(
        id=new_id("ch"),
        name=_check_name(name),
        type=kind,
        agent_ids=agent_ids,
        member_ids=member_ids,
        created_at=now,
        updated_at=now,
    )
    async with svc.db.write() as tx:
        await _check_ids(tx, agent_ids, member_ids)
        await channels.create(tx.conn, channel)
        await by.add(tx.conn, "channel.create", channel.id, _audited(channel))
        await tx.conn.run_sync(read_states.start_reading, channel.id, member_ids)
        tx.on_commit(lambda: tell_people(svc, None, channel))
    return channel


async def update(
    svc: Services,
    channel_id: str,
    by: Actor,
    name: str | None = None,
    agent_ids: list[str] | None = None,
    member_ids: list[str] | None = None,
    add: bool = False,
) -> Channel:
    """Rename or change members; with `add`, the ids given join the current members. The
    audit log's `channel.update` holds the fields that changed, with their new values."""
    async with svc.db.write() as tx:
        channel = await channels.get(tx.conn, channel_id)
        if channel is None:
            raise NotFound(f"No channel has the id '{channel_id}'.")
        new_agents = _dedupe(
            [*(channel.agent_ids if add else ()), *(agent_ids or ())]
            if add or agent_ids is not None
            else channel.agent_ids
        )
        new_members = _dedupe(
            [svc.owner_id, *(channel.member_ids if add else ()), *(member_ids or ())]
            if add or member_ids is not None
            else channel.member_ids
        )
        _check_shape(channel.type, new_agents)
        await _check_ids(tx, new_agents, new_members)
        updated = replace(
            channel,
            name=_check_name(name) if name is not None else channel.name,
            agent_ids=new_agents,
            member_ids=new_members,
            updated_at=utcnow(),
        )
        await channels.replace(tx.conn, updated)
        old = _audited(channel)
        changed = {k: v for k, v in _audited(updated).items() if old[k] != v}
        if changed:
            await by.add(tx.conn, "channel.update", channel_id, changed)
        joined = [m for m in new_members if m not in channel.member_ids]
        left = [m for m in channel.member_ids if m not in new_members]
        marker = await tx.conn.run_sync(read_states.start_reading, channel_id, joined)
        await tx.conn.run_sync(read_states.stop_reading, channel_id, left)
        tx.on_commit(lambda: tell_access_changed(svc, channel_id, new_members))
        tx.on_commit(lambda: tell_people(svc, channel, updated, marker))
    return updated


async def leave(svc: Services, user: User, channel_id: str, by: Actor) -> None:
    """A guest leaves a channel it is in; the owner reads every channel and cannot."""
    await visible(svc, user, channel_id)
    if user.is_owner:
        raise Forbidden("The owner reads every channel and cannot leave one.")
    async with svc.db.write() as tx:
        channel = await channels.get(tx.conn, channel_id)
        if channel is None or user.id not in channel.member_ids:
            raise NotFound(f"No channel has the id '{channel_id}'.")
        members = [m for m in channel.member_ids if m != user.id]
        updated = replace(channel, member_ids=members, updated_at=utcnow())
        await channels.replace(tx.conn, updated)
        await tx.conn.run_sync(read_states.stop_reading, channel_id, [user.id])
        await by.add(tx.conn, "channel.leave", channel_id)
        tx.on_commit(lambda: tell_access_changed(svc, channel_id, members))
        tx.on_commit(lambda: tell_people(svc, channel, updated))


async def delete(svc: Services, channel_id: str, by: Actor) -> None:
    """The owner deletes a channel with everything in it: its messages are erased as a deleted
    message is, an upload only they named is removed from disk, and every node stops the
    replies being written there."""
    async with svc.db.write() as tx:
        channel = await channels.get(tx.conn, channel_id)
        if channel is None:
            raise NotFound(f"No channel has the id '{channel_id}'.")
        orphans = await channels.delete_channel(tx.conn, channel_id)
        await by.add(tx.conn, "channel.delete", channel_id, {"name": channel.name})
        tx.on_commit(lambda: tell_access_changed(svc, channel_id, []))
        tx.on_commit(
            lambda: svc.bus.publish(CONTROL, {"type": "channel_deleted", "channelId": channel_id})
        )
        tx.on_commit(lambda: tell_people(svc, channel, None))
    await remove_upload_files(svc, orphans)
    erase_soon(svc)
