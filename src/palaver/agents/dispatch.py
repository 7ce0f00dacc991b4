"""Who answers a person's message, and in what order replies run.

Replies in different channels run concurrently; one agent answers one message in a channel
at a time, in the order the messages arrived.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from sqlalchemy import ColumnElement

from palaver import tracing
from palaver.agents.mentions import mentioned
from palaver.agents.runner import ReplyRequest, ReplyRunner
from palaver.agents.threads import count_in_thread
from palaver.bus.base import channel_topic
from palaver.domain import Agent, Channel, Message
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import messages as messages_store
from palaver.store.db import Tx

log = logging.getLogger(__name__)


@dataclass
class _Turn:
    lock: asyncio.Lock
    waiting: int = 0


async def addressed(svc: Services, message: Message, channel: Channel) -> list[Agent]:
    """In a dm, the channel's agent; in a group, the member agents mentioned, in order."""
    if not channel.agent_ids or (channel.type == "group" and "@" not in message.content):
        return []
    async with svc.db.read() as conn:
        members = await agents_store.get_many(conn, channel.agent_ids)
    if channel.type == "dm":
        return members[:1]
    return mentioned(message.content, members)


class Dispatcher:
    def __init__(self, svc: Services, runner: ReplyRunner) -> None:
        self.svc = svc
        self.runner = runner
        self._turns: dict[tuple[str, str], _Turn] = {}
        self._routing: dict[str, _Turn] = {}
        self._tasks: set[asyncio.Task[Message | None]] = set()
        self.group_handler: Callable[[Message, Channel, list[Agent]], Awaitable[None]] | None = None
        """Takes the messages that address agents in a group (the chain coordinator)."""

    async def on_user_message(self, message: Message, channel: Channel) -> None:
        """Messages of one channel are routed one at a time, in the order they were stored, so
        their replies queue in that order too. A channel without agents has none to route to."""
        if not channel.agent_ids:
            return
        turn = self._routing.setdefault(channel.id, _Turn(asyncio.Lock()))
        turn.waiting += 1
        try:
            async with turn.lock:
                await self._route(message, channel)
        finally:
            turn.waiting -= 1
            if turn.waiting == 0:
                self._routing.pop(channel.id, None)

    async def on_edited(self, message: Message, channel: Channel, before: str) -> None:
        """An edit that mentions an agent the message did not mention before is handed on as
        a new message would be, to those agents alone; a removed mention stops nothing."""
        if channel.type != "group":
            return
        earlier = {
            a.id for a in await addressed(self.svc, replace(message, content=before), channel)
        }
        turn = self._routing.setdefault(channel.id, _Turn(asyncio.Lock()))
        turn.waiting += 1
        try:
            async with turn.lock:
                await self._route(message, channel, earlier)
        finally:
            turn.waiting -= 1
            if turn.waiting == 0:
                self._routing.pop(channel.id, None)

    async def _route(
        self, message: Message, channel: Channel, already: set[str] | frozenset[str] = frozenset()
    ) -> None:
        targets = [a for a in await addressed(self.svc, message, channel) if a.id not in already]
        if not targets:
            return
        if channel.type == "group" and self.group_handler is not None:
            await self.group_handler(message, channel, targets)
            return
        self.spawn(ReplyRequest(agent=targets[0], channel=channel, trigger=message))

    def spawn(self, req: ReplyRequest) -> asyncio.Task[Message | None]:
        task = asyncio.create_task(self._in_turn(req))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def reply(self, req: ReplyRequest) -> Message:
        """Run a reply in its agent's turn in the channel and wait for it.

        A reply asked for by another agent (`call_agent`) does not wait for the turn: two agents
        each waiting, mid-reply, for the other's turn would wait forever."""
        if req.call_path:
            return await self.runner.run(req)
        key = (req.channel.id, req.agent.id)
        turn = self._turns.setdefault(key, _Turn(asyncio.Lock()))
        turn.waiting += 1
        try:
            async with turn.lock:
                return await self.runner.run(req)
        finally:
            turn.waiting -= 1
            if turn.waiting == 0:
                self._turns.pop(key, None)

    async def _in_turn(self, req: ReplyRequest) -> Message | None:
        try:
            return await self.reply(req)
        except asyncio.CancelledError:
            return None
        except Exception:
            log.exception("reply of %s in %s failed", req.agent.id, req.channel.id)
            return None

    async def shutdown(self) -> None:
        """Stop every reply in flight; each keeps what it had, marked interrupted."""
        streaming = self.runner.cancel_all("interrupted")
        for task in self._tasks - streaming:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def store_interrupted(svc: Services, tx: Tx, which: ColumnElement[bool] | None) -> int:
    """Store the replies whose node stopped or died (the drafts `which` selects, all if None)
    from their last checkpoint, marked interrupted; announced after the commit."""
    drafts = await messages_store.take_drafts(tx.conn, which)
    for draft, trace_context in drafts:
        draft.metadata["interrupted"] = True
        attributes = {
            "gen_ai.agent.id": draft.agent_id,
            "gen_ai.conversation.id": draft.channel_id,
            "palaver.message.id": draft.id,
        }
        with tracing.span("store_interrupted_reply", attributes, parent=trace_context):
            await messages_store.insert_message(tx.conn, draft)
            await count_in_thread(svc, tx, draft)
        tx.on_commit(
            lambda d=draft: svc.bus.publish(  # type: ignore[misc]
                channel_topic(d.channel_id), {"type": "message", "data": d.as_json()}
            )
        )
    return len(drafts)
