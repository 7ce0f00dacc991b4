"""Agents' documents and memories as the owner manages them, and re-indexing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

import anyio

from palaver.actions import agents
from palaver.api.multipart import UploadedFile
from palaver.bus.base import user_topic
from palaver.errors import Invalid
from palaver.knowledge.reindex import reindex_agent
from palaver.knowledge.service import IngestResult, QueryResult
from palaver.services import Services

log = logging.getLogger(__name__)
_running: set[asyncio.Task[None]] = set()


async def ingest(
    svc: Services, agent_id: str | None, upload: UploadedFile, visibility: str | None = None
) -> IngestResult:
    """Index an uploaded file in the agent's knowledge base; the received file is removed."""
    try:
        if not agent_id:
            raise Invalid("The form field 'agentId' is required.")
        data = await anyio.Path(upload.path).read_bytes()
        return await svc.knowledge.ingest(
            agent_id, upload.filename, data, "owner" if visibility is None else visibility
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            await anyio.to_thread.run_sync(os.unlink, upload.path)


async def query(svc: Services, agent_id: str, text: str, top_k: int) -> QueryResult:
    agent = await agents.get(svc, agent_id)
    reranker = await svc.rerankers.for_agent(agent)
    return await svc.knowledge.query(agent_id, text, top_k, reranker)


async def start_reindex(svc: Services, agent_id: str) -> None:
    """Re-embed the agent's stale memories and chunks in the background; progress goes to
    the owner's sockets as `reindex_progress` events."""
    await agents.get(svc, agent_id)

    async def progress(done: int, total: int) -> None:
        event = {
            "type": "reindex_progress",
            "data": {"agentId": agent_id, "done": done, "total": total},
        }
        await svc.bus.publish(user_topic(svc.owner_id), event)

    async def run() -> None:
        try:
            await reindex_agent(agent_id, [svc.knowledge, svc.memories], progress)
        except Exception:
            log.exception("re-indexing agent %s failed", agent_id)

    task = asyncio.create_task(run())
    _running.add(task)
    task.add_done_callback(_running.discard)


def incoming_dir(svc: Services) -> Path:
    """Where documents wait while they are received; never served."""
    return svc.config.data_dir / "incoming"
