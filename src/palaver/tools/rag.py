"""`rag_query`: an agent searches its own document knowledge base.

In a channel that has guests only the documents the owner shared with members are searched,
as only that channel's memories are (see `tools.memory.privacy_scope`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from palaver.errors import DomainError
from palaver.knowledge.rerank import Reranker
from palaver.knowledge.service import MAX_TOP_K, KnowledgeBase
from palaver.llm.base import ProviderError
from palaver.store.db import Database
from palaver.tools.base import ToolContext, ToolError
from palaver.tools.memory import privacy_scope

RerankerFor = Callable[[str], Awaitable[Reranker | None]]
"""The re-scorer for an agent: its own language model."""


class RagQueryTool:
    name = "rag_query"
    description = (
        "Search your documents. Answers the most relevant passages with their document name, "
        "page and section, so you can cite them."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "topK": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5},
        },
        "required": ["query"],
    }

    def __init__(self, db: Database, knowledge: KnowledgeBase, reranker_for: RerankerFor) -> None:
        self._db = db
        self._knowledge = knowledge
        self._reranker_for = reranker_for

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        try:
            found = await self._knowledge.query(
                ctx.agent_id,
                str(args["query"]),
                int(args.get("topK", 5)),
                await self._reranker_for(ctx.agent_id),
                members_only=await privacy_scope(self._db, ctx.channel_id) is not None,
            )
        except (DomainError, ProviderError) as exc:
            raise ToolError(str(exc)) from exc
        return json.dumps(
            [
                {
                    "documentName": r.document_name,
                    "page": r.page,
                    "headingPath": list(r.heading_path),
                    "content": r.content,
                    "score": round(r.score, 5),
                }
                for r in found.results
            ],
            ensure_ascii=False,
        )
