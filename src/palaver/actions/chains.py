"""Chains as people see and steer them: start, read, pause, resume, cancel."""

from __future__ import annotations

from palaver.actions import messages
from palaver.actions.channels import visible
from palaver.domain import User
from palaver.errors import Invalid, NotFound
from palaver.services import Services
from palaver.store import chains as chains_store
from palaver.store import messages as messages_store
from palaver.store.audit import Actor
from palaver.store.chains import Chain

LIST_LIMIT = 100


async def start(
    svc: Services, user: User, channel_id: str, agent_ids: list[str], content: str, by: Actor
) -> Chain:
    """Post `content` as the person's message, then run the named agents over it in order."""
    channel = await visible(svc, user, channel_id)
    if channel.type != "group":
        raise Invalid("Chains run in group channels.")
    agent_ids = list(dict.fromkeys(agent_ids))
    if not agent_ids:
        raise Invalid("A chain needs at least one agent.")
    for agent_id in agent_ids:
        if agent_id not in channel.agent_ids:
            raise Invalid(f"The agent '{agent_id}' is not a member of this channel.")
    limit = svc.settings.current.agents.maxChainSteps
    if len(agent_ids) > limit:
        raise Invalid(f"A chain has at most {limit} steps.")
    message_id, _ = await messages.post(
        svc, user, channel_id, content, "text", None, None, hand_on=False
    )
    async with svc.db.read() as conn:
        trigger = await conn.run_sync(messages_store.get, message_id)
    assert trigger is not None
    return await svc.chains.start(channel, trigger, agent_ids, "explicit", by)


async def get(svc: Services, user: User, chain_id: str) -> Chain:
    async with svc.db.read() as conn:
        chain = await chains_store.get(conn, chain_id)
    if chain is None:
        raise NotFound(f"No chain has the id '{chain_id}'.")
    try:
        await visible(svc, user, chain.channel_id)
    except NotFound:
        raise NotFound(f"No chain has the id '{chain_id}'.") from None
    return chain


async def in_channel(svc: Services, user: User, channel_id: str) -> list[Chain]:
    await visible(svc, user, channel_id)
    async with svc.db.read() as conn:
        return await chains_store.in_channel(conn, channel_id, LIST_LIMIT)


async def steer(svc: Services, user: User, chain_id: str, action: str, by: Actor) -> Chain:
    await get(svc, user, chain_id)
    if action == "pause":
        return await svc.chains.pause(chain_id, by)
    if action == "resume":
        return await svc.chains.resume(chain_id, by)
    return await svc.chains.cancel(chain_id, by)
