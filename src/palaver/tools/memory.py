"""`memory_write` and `memory_search`: an agent's own long-term memory.

In a channel that has guests, only what was learned in that channel is compared or found, so
nothing said to the agent elsewhere reaches them.
"""

from __future__ import annotations

import json
from typing import Any

from palaver.errors import DomainError
from palaver.llm.base import ProviderError
from palaver.memory import MAX_TOP_K, MemoryStore
from palaver.store import channels as channels_store
from palaver.store.db import Database
from palaver.tools.base import ToolContext, ToolError

MEMORY_TYPES = ["semantic", "episodic", "procedural"]


async def privacy_scope(db: Database, channel_id: str) -> str | None:
    """The channel to limit memory to, or None where every memory may be used."""
    async with db.read() as conn:
        return channel_id if await channels_store.has_guests(conn, channel_id) else None


class MemoryWriteTool:
    name = "memory_write"
    description = (
        "Remember something for later: a fact (semantic), an event (episodic) or a way of "
        "doing things (procedural). Near-duplicates are skipped; close matches are updated."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 1, "description": "What to remember."},
            "type": {"type": "string", "enum": MEMORY_TYPES, "default": "semantic"},
        },
        "required": ["content"],
    }

    def __init__(self, db: Database, memories: MemoryStore) -> None:
        self._db = db
        self._memories = memories

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        try:
            result = await self._memories.write(
                ctx.agent_id,
                str(args["content"]),
                str(args.get("type", "semantic")),
                channel_id=ctx.channel_id,
                source_message_id=ctx.trigger_id or ctx.message_id,
                only_channel=await privacy_scope(self._db, ctx.channel_id),
            )
        except (DomainError, ProviderError) as exc:
            raise ToolError(str(exc)) from exc
        return json.dumps(result.as_json(), ensure_ascii=False)


class MemorySearchTool:
    name = "memory_search"
    description = "Search what you remember; answers the closest memories with their similarity."
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "topK": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5},
            "type": {"type": "string", "enum": MEMORY_TYPES},
        },
        "required": ["query"],
    }

    def __init__(self, db: Database, memories: MemoryStore) -> None:
        self._db = db
        self._memories = memories

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        try:
            found = await self._memories.search(
                ctx.agent_id,
                str(args["query"]),
                int(args.get("topK", 5)),
                type=args.get("type"),
                only_channel=await privacy_scope(self._db, ctx.channel_id),
            )
        except (DomainError, ProviderError) as exc:
            raise ToolError(str(exc)) from exc
        return json.dumps(
            [
                {
                    "id": m.memory.id,
                    "type": m.memory.type,
                    "content": m.memory.content,
                    "similarity": round(m.similarity, 4),
                }
                for m in found
            ],
            ensure_ascii=False,
        )
