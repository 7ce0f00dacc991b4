"""What an agent is told: its persona, its tools, injected knowledge, and the recent history.

Tokens are estimated (about four characters each) rather than counted with a model's own
tokenizer: providers differ, none of their tokenizers is available offline for every model,
and the budget only has to keep the prompt safely inside the context window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import Agent, Channel, Message
from palaver.llm.base import ChatMessage, ToolSpec
from palaver.store import agents as agents_store
from palaver.store import messages as messages_store
from palaver.store import users as users_store
from palaver.store.db import Database

HISTORY_SCAN = 200
"""How many recent messages are considered before the token budget cuts them."""
_AFTER_ANY_ID_CHAR = "~"
"""Sorts after every character of an id, so `id + "~"` bounds a page to ids up to `id`."""
_TEXT_TYPES = ("text", "image", "file")


CHARS_PER_TOKEN = 4
TURN_OVERHEAD = 4
"""Tokens a chat format spends around each message."""


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) + TURN_OVERHEAD


def trim_middle(text: str, max_tokens: int) -> str:
    """`text` cut to about `max_tokens`, keeping its start and its end: a long paste usually
    says what it is at the top and asks its question at the bottom."""
    room = max(0, max_tokens - TURN_OVERHEAD) * CHARS_PER_TOKEN
    if len(text) <= room:
        return text
    marker = "\n[… {} characters cut …]\n"
    keep = max(0, room - len(marker.format(len(text))))
    head = keep // 2
    tail = keep - head
    cut = len(text) - head - tail
    return text[:head] + marker.format(cut) + (text[-tail:] if tail else "")


class PromptSection(Protocol):
    """A source of text for the system prompt, such as relevant memories or documents."""

    async def __call__(self, agent: Agent, channel: Channel, message: Message) -> str | None: ...


@dataclass
class ContextBuilder:
    db: Database
    sections: list[PromptSection] = field(default_factory=list)

    async def build(
        self,
        agent: Agent,
        channel: Channel,
        trigger: Message,
        tools: Sequence[ToolSpec],
        context_window: int,
        reply_tokens: int,
        notes: Sequence[str] = (),
    ) -> list[ChatMessage]:
        """The prompt for answering `trigger`; `notes` are extra system text (e.g. a chain's)."""
        system = await self._system(agent, channel, trigger, tools, notes)
        budget = context_window - reply_tokens - estimate_tokens(system)
        async with self.db.read() as conn:
            recent = await conn.run_sync(
                messages_store.page,
                channel.id,
                HISTORY_SCAN,
                trigger.id + _AFTER_ANY_ID_CHAR,
                trigger.thread_id,
            )
            recent = [m for m in recent if m.type in _TEXT_TYPES and m.content]
            names = await _author_names(conn, recent)
        history: list[ChatMessage] = []
        for message in reversed(recent):
            turn = _turn(message, agent, names)
            cost = estimate_tokens(turn.content)
            if cost > budget and history:
                break
            if cost > budget:
                turn = replace(turn, content=trim_middle(turn.content, max(budget, 0)))
                cost = estimate_tokens(turn.content)
            budget -= cost
            history.append(turn)
        history.reverse()
        return [ChatMessage("system", system), *history]

    async def _system(
        self,
        agent: Agent,
        channel: Channel,
        trigger: Message,
        tools: Sequence[ToolSpec],
        notes: Sequence[str],
    ) -> str:
        parts = [f"You are {agent.name}."]
        if agent.soul.strip():
            parts.append(agent.soul.strip())
        where = "a direct conversation" if channel.type == "dm" else "a group channel"
        parts.append(
            f'You are talking in {where} named "{channel.name}". Messages from others start '
            "with their author's name."
        )
        if tools:
            lines = "\n".join(f"- {t.name}: {t.description}" for t in tools)
            parts.append(f"## Tools you can use\n{lines}")
        for section in self.sections:
            text = await section(agent, channel, trigger)
            if text:
                parts.append(text)
        parts.extend(notes)
        return "\n\n".join(parts)


async def _author_names(conn: AsyncConnection, recent: list[Message]) -> dict[str, str]:
    user_ids = list({m.user_id for m in recent if m.user_id})
    agent_ids = list({m.agent_id for m in recent if m.agent_id})
    names = {u.id: u.name for u in await users_store.get_many(conn, user_ids)}
    names.update({a.id: a.name for a in await agents_store.get_many(conn, agent_ids)})
    return names


def _turn(message: Message, agent: Agent, names: dict[str, str]) -> ChatMessage:
    if message.agent_id == agent.id:
        return ChatMessage("assistant", message.content)
    if message.user_id is None and message.agent_id is None:
        author = "Scheduled prompt" if "scheduleId" in message.metadata else "System"
    else:
        author = names.get(message.user_id or message.agent_id or "", "Someone")
    return ChatMessage("user", f"{author}: {message.content}")
