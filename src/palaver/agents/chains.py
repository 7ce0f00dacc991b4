"""Collaboration chains: agents answer one after another, each building on the last.

A chain starts when a person's message in a group mentions several member agents, when
`POST /api/chains` asks for one, or when an agent's reply hands off by mentioning another
member. Each step is an ordinary streamed reply; the agent is told the original message and
every earlier step's output. Pause and cancel are requests stored on the chain and honoured
when the running step ends, so any node can take them.

A step runs only if its agent is a member of the channel when the step starts: an agent
removed meanwhile (say while the chain was paused) is skipped, so it never answers in a
channel it is no longer in, with what it knows from elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.agents.dispatch import Dispatcher
from palaver.agents.mentions import mentioned
from palaver.agents.runner import ReplyRequest
from palaver.bus.base import channel_topic
from palaver.domain import Agent, Channel, Message
from palaver.errors import Conflict, NotFound
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import chains as chains_store
from palaver.store import channels as channels_store
from palaver.store import messages as messages_store
from palaver.store.audit import Actor
from palaver.store.chains import Chain, Step
from palaver.store.db import Tx
from palaver.store.tables.base import utcnow
from palaver.store.tables.chains import chains as chains_table

log = logging.getLogger(__name__)


class ChainCoordinator:
    def __init__(self, svc: Services, dispatcher: Dispatcher) -> None:
        self.svc = svc
        self.dispatcher = dispatcher
        self._driving: dict[str, asyncio.Task[None]] = {}

    async def on_group_message(
        self, message: Message, channel: Channel, targets: list[Agent]
    ) -> None:
        """Several agents mentioned: a chain over them; one: a reply that may hand off."""
        if len(targets) >= 2:
            await self.start(channel, message, [a.id for a in targets], "mention")
            return
        task = asyncio.create_task(self._single(message, channel, targets[0]))
        self._track(f"single:{message.id}", task)

    async def start(
        self,
        channel: Channel,
        trigger: Message,
        agent_ids: Sequence[str],
        source: str,
        by: Actor | None = None,
    ) -> Chain:
        """`by`: the person who started it, for the audit log (a chain of mentions has none)."""
        limit = self.svc.settings.current.agents.maxChainSteps
        steps = [Step(i + 1, a, source) for i, a in enumerate(list(agent_ids)[:limit])]
        chain = await self._create(channel, trigger, steps, by=by)
        self._drive(chain.id)
        return chain

    async def pause(self, chain_id: str, by: Actor) -> Chain:
        return await self._request(chain_id, "pause", by)

    async def cancel(self, chain_id: str, by: Actor) -> Chain:
        return await self._request(chain_id, "cancel", by)

    async def resume(self, chain_id: str, by: Actor) -> Chain:
        async with self.svc.db.write() as tx:
            chain = await self._get(tx.conn, chain_id)
            if chain.status != "paused":
                raise Conflict(f"The chain is {chain.status}, not paused.")
            chain.status, chain.requested, chain.updated_at = "running", None, utcnow()
            chain.node_id = self.svc.node_id
            await chains_store.save(tx.conn, chain, settle_request=True)
            await by.add(tx.conn, "chain.resume", chain.id, {"channelId": chain.channel_id})
        self._drive(chain.id)
        return chain

    async def pause_lost(self, tx: Tx, which: ColumnElement[bool] | None) -> int:
        """Running chains whose node stopped or died (those `which` selects, all if None)
        wait, paused, for a person to resume them; announced after the commit."""
        paused = await chains_store.pause_running(tx.conn, utcnow(), which)
        for chain in paused:
            tx.on_commit(lambda c=chain: self._announce(c))  # type: ignore[misc]
        return len(paused)

    async def shutdown(self) -> None:
        """Stop driving; this node's running chains are paused, as a restart would."""
        for task in list(self._driving.values()):
            task.cancel()
        await asyncio.gather(*self._driving.values(), return_exceptions=True)
        async with self.svc.db.write() as tx:
            await self.pause_lost(tx, chains_table.c.node_id == self.svc.node_id)

    async def _request(self, chain_id: str, what: str, by: Actor) -> Chain:
        async with self.svc.db.write() as tx:
            chain = await self._get(tx.conn, chain_id)
            audited = {"channelId": chain.channel_id}
            if chain.status == "paused" and what == "cancel":
                self._end(chain, "error", "cancelled")
                await chains_store.save(tx.conn, chain, settle_request=True)
                await by.add(tx.conn, "chain.cancel", chain.id, audited)
                tx.on_commit(lambda: self._announce(chain))
                return chain
            if chain.status != "running":
                raise Conflict(f"The chain is {chain.status}; it cannot be {what}d now.")
            chain.requested = what
            await chains_store.request(tx.conn, chain.id, what)
            await by.add(tx.conn, f"chain.{what}", chain.id, audited)
        return chain

    async def _get(self, conn: AsyncConnection, chain_id: str) -> Chain:
        chain = await chains_store.get(conn, chain_id)
        if chain is None:
            raise NotFound(f"No chain has the id '{chain_id}'.")
        return chain

    def _track(self, key: str, task: asyncio.Task[None]) -> None:
        self._driving[key] = task
        task.add_done_callback(lambda _: self._driving.pop(key, None))

    def _drive(self, chain_id: str) -> None:
        self._track(chain_id, asyncio.create_task(self._run(chain_id)))

    async def _single(self, message: Message, channel: Channel, agent: Agent) -> None:
        reply = await self.dispatcher.reply(
            ReplyRequest(agent=agent, channel=channel, trigger=message)
        )
        if _failed(reply):
            return
        limits = self.svc.settings.current.agents
        room = min(limits.maxHandoffs, limits.maxChainSteps - 1)
        handoffs = (await self._handoffs(channel, reply, {agent.id}))[: max(0, room)]
        if not handoffs:
            return
        steps = [Step(1, agent.id, "mention", "completed", reply.id)]
        steps += [Step(i + 2, a.id, "handoff") for i, a in enumerate(handoffs)]
        chain = await self._create(channel, message, steps, handoffs=len(handoffs))
        await self._run(chain.id)

    async def _create(
        self,
        channel: Channel,
        trigger: Message,
        steps: list[Step],
        handoffs: int = 0,
        by: Actor | None = None,
    ) -> Chain:
        now = utcnow()
        chain = Chain(
            id=new_id("chain"),
            channel_id=channel.id,
            trigger_message_id=trigger.id,
            status="running",
            created_at=now,
            updated_at=now,
            handoffs=handoffs,
            steps=steps,
            node_id=self.svc.node_id,
        )
        async with self.svc.db.write() as tx:
            await chains_store.save(tx.conn, chain, new=True)
            if by is not None:
                changes = {"channelId": channel.id, "agentIds": [s.agent_id for s in steps]}
                await by.add(tx.conn, "chain.create", chain.id, changes)
        return chain

    async def _run(self, chain_id: str) -> None:
        try:
            while await self._step(chain_id):
                pass
        except Exception:
            log.exception("chain %s failed", chain_id)

    async def _step(self, chain_id: str) -> bool:
        """Run the next step; answers whether the chain goes on."""
        async with self.svc.db.read() as conn:
            chain = await chains_store.get(conn, chain_id)
            channel = await channels_store.get(conn, chain.channel_id) if chain else None
            trigger = (
                await conn.run_sync(messages_store.get, chain.trigger_message_id) if chain else None
            )
        if chain is None or channel is None or trigger is None or chain.status != "running":
            return False
        step = chain.next_step
        if step is None:
            return await self._finish(chain, "completed", None)
        if await self._held(chain, channel, step):
            return False
        agent = await self._agent(step.agent_id)
        if agent is None:
            step.status = "error"
            return await self._finish(chain, "error", f"The agent {step.agent_id} is gone.")
        if agent.id not in channel.agent_ids:
            step.status = "skipped"
            async with self.svc.db.write() as tx:
                await chains_store.save(tx.conn, chain)
            return True
        step.status = "running"
        async with self.svc.db.write() as tx:
            await chains_store.save(tx.conn, chain)
        await self._announce(chain)
        reply = await self.dispatcher.reply(
            ReplyRequest(
                agent=agent,
                channel=channel,
                trigger=trigger,
                notes=[await self._notes(chain, step, trigger)],
                metadata={"chainId": chain.id, "chainStep": step.position},
            )
        )
        step.message_id = reply.id
        if reply.metadata.get("interrupted"):
            return False
        if _failed(reply):
            step.status = "error"
            reason = reply.metadata.get("error") or "the step was cancelled"
            return await self._finish(chain, "error", str(reason))
        step.status = "completed"
        chain.handoffs += await self._add_handoffs(chain, channel, reply)
        # Checked and saved in one write, so a sweep that took the chain meanwhile (another
        # write) is either seen here or comes after, never undone by this save.
        async with self.svc.db.write() as tx:
            fresh = await chains_store.get(tx.conn, chain.id)
            if fresh is None or fresh.node_id != self.svc.node_id:
                log.warning("chain %s was taken over while its step ran; left as it is", chain.id)
                return False
            chain.requested = fresh.requested
            ending = _ending(chain)
            if ending is None:
                chain.updated_at = utcnow()
                await chains_store.save(tx.conn, chain)
                return True
            self._end(chain, *ending)
            await chains_store.save(tx.conn, chain, settle_request=True)
            tx.on_commit(lambda: self._announce(chain))
        return False

    async def _held(self, chain: Chain, channel: Channel, step: Step) -> bool:
        """A hand-off waits for no one: a newer human message in the channel supersedes it."""
        if step.source != "handoff":
            return False
        async with self.svc.db.read() as conn:
            latest = await conn.run_sync(messages_store.page, channel.id, 50)
        spoke = any(m.user_id and m.id > chain.trigger_message_id for m in latest)
        if spoke:
            for pending in chain.steps:
                if pending.status == "pending":
                    pending.status = "skipped"
            await self._finish(chain, "completed", "superseded by a newer message")
        return spoke

    async def _add_handoffs(self, chain: Chain, channel: Channel, reply: Message) -> int:
        settings = self.svc.settings.current.agents
        room = min(settings.maxHandoffs - chain.handoffs, settings.maxChainSteps - len(chain.steps))
        found = await self._handoffs(channel, reply, {s.agent_id for s in chain.steps})
        added = found[: max(0, room)]
        for agent in added:
            chain.steps.append(Step(len(chain.steps) + 1, agent.id, "handoff"))
        return len(added)

    async def _handoffs(self, channel: Channel, reply: Message, exclude: set[str]) -> list[Agent]:
        if channel.type != "group":
            return []
        async with self.svc.db.read() as conn:
            members = await agents_store.get_many(conn, channel.agent_ids)
        return [a for a in mentioned(reply.content, members) if a.id not in exclude]

    async def _agent(self, agent_id: str) -> Agent | None:
        async with self.svc.db.read() as conn:
            return await agents_store.get(conn, agent_id)

    async def _notes(self, chain: Chain, step: Step, trigger: Message) -> str:
        done = [s for s in chain.steps if s.status == "completed" and s.message_id]
        lines = [
            f"## Collaboration chain\nYou are step {step.position} of {len(chain.steps)} in a "
            "chain of agents answering the message above. Build on what the agents before you "
            "wrote; do not repeat it."
        ]
        if done:
            async with self.svc.db.read() as conn:
                replies = await messages_store.get_many(
                    conn, [s.message_id for s in done if s.message_id]
                )
                names = {
                    a.id: a.name
                    for a in await agents_store.get_many(conn, [s.agent_id for s in done])
                }
            for s in done:
                reply = replies.get(s.message_id or "")
                if reply is not None:
                    lines.append(
                        f"### Output of step {s.position}, by {names.get(s.agent_id, s.agent_id)}"
                        f"\n{reply.content}"
                    )
        return "\n\n".join(lines)

    async def _finish(self, chain: Chain, status: str, reason: str | None) -> bool:
        self._end(chain, status, reason)
        async with self.svc.db.write() as tx:
            await chains_store.save(tx.conn, chain, settle_request=True)
            tx.on_commit(lambda: self._announce(chain))
        return False

    def _end(self, chain: Chain, status: str, reason: str | None) -> None:
        chain.status, chain.reason, chain.requested, chain.updated_at = (
            status,
            reason,
            None,
            utcnow(),
        )

    async def _announce(self, chain: Chain) -> None:
        view = chain.as_json()
        data = {k: view[k] for k in ("currentAgent", "step", "totalSteps", "status")}
        data["chainId"] = chain.id
        if chain.reason:
            data["reason"] = chain.reason
        await self.svc.bus.publish(
            channel_topic(chain.channel_id), {"type": "collab_status", "data": data}
        )


def _failed(reply: Message) -> bool:
    return bool(reply.metadata.get("error") or reply.metadata.get("cancelled"))


def _ending(chain: Chain) -> tuple[str, str | None] | None:
    """How a chain whose step just completed ends now (status, reason), if it does."""
    if chain.requested == "cancel":
        return "error", "cancelled"
    if chain.next_step is None:
        return "completed", None
    if chain.requested == "pause":
        return "paused", None
    return None
