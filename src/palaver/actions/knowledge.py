"""Agents' documents and memories as the owner manages them, and re-indexing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

import anyio

from palaver.actions import agents
from palaver.api.multipart import UploadedFile
from palaver.bus.base import user_topic
from palaver.errors import Invalid
from palaver.knowledge.documents import Document
from palaver.knowledge.reindex import reindex_agent
from palaver.knowledge.service import IngestResult, QueryResult
from palaver.services import Services
from palaver.store.audit import Actor

log = logging.getLogger(__name__)
_running: set[asyncio.Task[Any]] = set()
_live: dict[str, int] = {}
"""Chunks embedded so far, by document id, while it is indexed."""


async def ingest(
    svc: Services,
    agent_id: str | None,
    upload: UploadedFile,
    by: Actor,
    visibility: str | None = None,
    respond_async: bool = False,
) -> IngestResult:
    """Index an uploaded file in the agent's knowledge base; the received file is removed.

    With `respond_async`, the answer comes once the parsed document is recorded (`indexing`)
    and the embedding goes on in the background. Either way the owner's sockets follow it as
    `ingest_progress` events."""
    try:
        if not agent_id:
            raise Invalid("The form field 'agentId' is required.")
        data = await anyio.Path(upload.path).read_bytes()
    finally:
        with contextlib.suppress(FileNotFoundError):
            await anyio.to_thread.run_sync(os.unlink, upload.path)
    chosen = "owner" if visibility is None else visibility
    recorded: asyncio.Future[Document] = asyncio.get_running_loop().create_future()
    seen: dict[str, Document] = {}

    async def progress(document: Document, done: int) -> None:
        seen["document"] = document
        _live[document.id] = done
        if not recorded.done():
            recorded.set_result(document)
        await _publish(svc, document, done, "indexing")

    async def run() -> IngestResult:
        try:
            result = await svc.knowledge.ingest(
                agent_id, upload.filename, data, chosen, progress, by
            )
        except Exception:
            if "document" in seen:
                await _publish(svc, seen["document"], 0, "failed")
            raise
        finally:
            if "document" in seen:
                _live.pop(seen["document"].id, None)
        if not result.duplicate:
            await _publish(svc, result.document, result.document.chunks, "ready")
        return result

    if not respond_async:
        return await run()
    task = asyncio.create_task(run())
    waiting: set[asyncio.Future[Any]] = {task, recorded}
    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    if not recorded.done():
        return task.result()
    _running.add(task)
    task.add_done_callback(_settled)
    return IngestResult(recorded.result(), duplicate=False)


def _settled(task: asyncio.Task[Any]) -> None:
    """A background ingest's failure is on its document already; nothing is left to raise.
    Its text may quote the file (a PDF parser's complaint), so the log has only its type."""
    _running.discard(task)
    failed = None if task.cancelled() else task.exception()
    if failed is not None:
        log.info("a background ingest failed (%s); its document says why", type(failed).__name__)


async def _publish(svc: Services, document: Document, done: int, status: str) -> None:
    event = {
        "type": "ingest_progress",
        "data": {
            "documentId": document.id,
            "agentId": document.agent_id,
            "done": done,
            "total": document.chunks,
            "status": status,
        },
    }
    await svc.bus.publish(user_topic(svc.owner_id), event)


def progress_of(document: Document) -> int | None:
    """Chunks embedded so far of a document being indexed in this process."""
    return _live.get(document.id)


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
