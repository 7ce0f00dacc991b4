"""The knowledge base: what the upload and query routes, the rag_query tool and prompt
injection call. Every agent's documents are private to it, and a document is the owner's
unless its visibility is `members`: searches for a channel with guests pass `members_only`,
and then only such documents are searched, filtered inside the index before ranking."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio

from palaver import tracing
from palaver.errors import DomainError, Invalid, NotFound
from palaver.ids import new_id
from palaver.knowledge import documents as repo
from palaver.knowledge.batching import BatchQueue
from palaver.knowledge.chunk import (
    Chunk,
    chunk_context,
    chunk_document,
    document_title,
    embedding_text,
)
from palaver.knowledge.documents import VISIBILITIES, Document
from palaver.knowledge.embed import Embedder, current_space
from palaver.knowledge.fusion import DEPTH, fuse
from palaver.knowledge.index.base import Entry, SearchIndex, Space
from palaver.knowledge.parse import ParsedDocument, UnreadableDocument, parse_document
from palaver.knowledge.rerank import RERANK_DEPTH, Reranker
from palaver.llm.base import ProviderError
from palaver.store.audit import Actor
from palaver.store.db import Database
from palaver.store.tables.base import utcnow

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MAX_TOP_K = 20
IngestProgress = Callable[[Document, int], Awaitable[None]]
"""Told the recorded document and how many of its chunks are embedded so far."""
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class IngestResult:
    document: Document
    duplicate: bool
    """The same bytes were already in this agent's knowledge base; nothing new was stored."""

    def as_json(self) -> dict[str, Any]:
        return {"document": self.document.as_json(), "duplicate": self.duplicate}


@dataclass(frozen=True)
class ChunkResult:
    chunk_id: str
    document_id: str
    document_name: str
    content: str
    heading_path: tuple[str, ...]
    page: int | None
    score: float
    """The fusion score; the order of results is the re-scored one when `relevance` is set."""
    text_rank: int | None
    vector_rank: int | None
    relevance: float | None = None
    """The language model's 0-10 grade, when the results were re-scored."""

    def as_json(self) -> dict[str, Any]:
        return {
            "chunkId": self.chunk_id,
            "documentId": self.document_id,
            "documentName": self.document_name,
            "content": self.content,
            "headingPath": list(self.heading_path),
            "page": self.page,
            "score": self.score,
            "textRank": self.text_rank,
            "vectorRank": self.vector_rank,
            "relevance": self.relevance,
        }


@dataclass(frozen=True)
class QueryResult:
    results: list[ChunkResult]
    reranked: bool

    def as_json(self) -> dict[str, Any]:
        return {"results": [r.as_json() for r in self.results], "reranked": self.reranked}


def document_name(filename: str) -> str:
    """The file's own name, without any client path, control characters or excess length."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return " ".join(_UNSAFE_NAME.sub(" ", base).split())[:255] or "document"


def _prepare(name: str, data: bytes) -> tuple[ParsedDocument, list[Chunk]]:
    parsed = parse_document(name, data)
    return parsed, chunk_document(parsed)


@dataclass(frozen=True)
class _Upload:
    """A parsed document and its chunks with their new ids, waiting to be embedded."""

    document: Document
    parts: list[tuple[str, Chunk]]

    def texts(self) -> list[str]:
        title = document_title(self.document.name)
        return [
            embedding_text(chunk_context(title, part.heading_path), part.content)
            for _, part in self.parts
        ]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class KnowledgeBase:
    def __init__(
        self,
        db: Database,
        index: SearchIndex,
        embedder: Callable[[], Embedder],
        node_id: str | None = None,
    ) -> None:
        """`embedder` returns the embedder the settings choose now, so a change of setting
        takes effect without rebuilding the service; `node_id` is recorded on each document
        while this node indexes it (its lease)."""
        self._node_id = node_id
        self._db = db
        self._index = index
        self._embedder = embedder
        self._queue: BatchQueue[_Upload, IngestResult] = BatchQueue(self._store)

    async def aclose(self) -> None:
        """Finish the uploads being stored (for shutdown)."""
        await self._queue.aclose()

    @property
    def ingest_queue(self) -> tuple[int, int]:
        """Uploads being embedded and stored or waiting to be, as documents and chunks."""
        return self._queue.jobs, self._queue.size

    async def ingest(
        self,
        agent_id: str,
        filename: str,
        data: bytes,
        visibility: str = "owner",
        progress: IngestProgress | None = None,
        by: Actor | None = None,
    ) -> IngestResult:
        """Parse, chunk, embed and index a document. Raises NotFound for an unknown agent,
        UnsupportedDocument (415) or UnreadableDocument (400) for a bad file. A duplicate keeps
        the visibility it has; a failed earlier upload of the same bytes is replaced.

        The parsed document is recorded `indexing` before its chunks are embedded, and
        `progress(document, done)` is awaited then (done 0) and once its chunks are stored.
        Embedding and storing go through the batch queue, so that concurrent uploads share the
        model's batches and one transaction. A failure leaves the record `failed` with the
        reason, and no chunk of it. `by`: the person uploading, whose `document.create` goes
        in the audit log with the record (a duplicate writes nothing)."""
        _check_visibility(visibility)
        name = document_name(filename)
        digest = await anyio.to_thread.run_sync(_sha256, data)
        async with self._db.read() as conn:
            if not await repo.agent_exists(conn, agent_id):
                raise NotFound(f"There is no agent '{agent_id}'.")
            existing = await repo.find_by_hash(conn, agent_id, digest)
        if existing is not None and existing.status != "failed":
            return IngestResult(existing, duplicate=True)
        parsed, parts = await anyio.to_thread.run_sync(_prepare, name, data)
        if not parts:
            raise UnreadableDocument("The document contains no text.")
        document = Document(
            id=new_id("doc"),
            agent_id=agent_id,
            name=name,
            kind=parsed.kind,
            bytes=len(data),
            pages=parsed.page_count,
            chunks=len(parts),
            content_hash=digest,
            created_at=utcnow(),
            visibility=visibility,
            status="indexing",
        )
        async with self._db.write() as tx:
            if not await repo.agent_exists(tx.conn, agent_id):
                raise NotFound(f"There is no agent '{agent_id}'.")
            existing = await repo.find_by_hash(tx.conn, agent_id, digest)
            if existing is not None and existing.status != "failed":
                return IngestResult(existing, duplicate=True)
            if existing is not None:
                await repo.delete_document(tx.conn, existing.id)
            await repo.insert_record(tx.conn, document, self._node_id)
            if by is not None:
                await by.add(tx.conn, "document.create", document.id, _audited(document))
        try:
            if progress is not None:
                await progress(document, 0)
            upload = _Upload(document, [(new_id("chunk"), part) for part in parts])
            result = await self._queue.submit(upload, len(parts))
            if progress is not None:
                await progress(document, len(parts))
        except Exception as error:
            await self._fail(document.id, _reason(error))
            raise
        return result

    async def _fail(self, document_id: str, reason: str) -> None:
        with anyio.CancelScope(shield=True):
            async with self._db.write() as tx:
                await repo.set_status(tx.conn, document_id, "failed", reason)

    async def _store(self, batch: Sequence[_Upload]) -> list[IngestResult | BaseException]:
        """Embed a batch's chunks in one call and store their chunks in one transaction; each
        upload gets its document made `ready`, or the error that is its own."""
        embedder = self._embedder()
        texts = [text for upload in batch for text in upload.texts()]
        vectors = await embedder.embed(texts)
        space = Space(embedder.name, int(vectors.shape[1]))
        results: list[IngestResult | BaseException] = []
        import numpy as np  # loaded by the embedder already; not at start

        async with self._db.write() as tx:
            added: dict[str, list[tuple[_Upload, NDArray[np.float32]]]] = {}
            offset = 0
            for upload in batch:
                document = upload.document
                rows = vectors[offset : offset + len(upload.parts)]
                offset += len(upload.parts)
                if await repo.get(tx.conn, document.id) is None:
                    results.append(NotFound("The document was deleted while it was being indexed."))
                    continue
                await repo.insert_chunks(tx.conn, document, upload.parts)
                await repo.set_status(tx.conn, document.id, "ready")
                added.setdefault(document.agent_id, []).append((upload, rows))
                results.append(IngestResult(replace(document, status="ready"), duplicate=False))
            for agent_id, uploads in added.items():
                await self._index.add_text(tx, agent_id, [u.document.id for u, _ in uploads])
                entries = [
                    Entry(chunk_id, type=u.document.visibility)
                    for u, _ in uploads
                    for chunk_id, _ in u.parts
                ]
                stacked = np.vstack([r for _, r in uploads])
                await self._index.put(tx, agent_id, "chunk", entries, stacked, space)
        return results

    async def documents(self, agent_id: str) -> list[Document]:
        """Newest first."""
        async with self._db.read() as conn:
            if not await repo.agent_exists(conn, agent_id):
                raise NotFound(f"There is no agent '{agent_id}'.")
            return await repo.list_for(conn, agent_id)

    async def document(self, document_id: str) -> Document:
        async with self._db.read() as conn:
            found = await repo.get(conn, document_id)
        if found is None:
            raise NotFound(f"There is no document '{document_id}'.")
        return found

    async def set_visibility(
        self, document_id: str, visibility: str, by: Actor | None = None
    ) -> Document:
        """Share a document with channels that have guests (`members`), or take it back; a
        change is audited (`document.update`) when `by` is given."""
        _check_visibility(visibility)
        async with self._db.write() as tx:
            found = await repo.get(tx.conn, document_id)
            if found is None:
                raise NotFound(f"There is no document '{document_id}'.")
            if found.visibility != visibility:
                await repo.set_visibility(tx.conn, document_id, visibility)
                ids = await repo.chunk_ids(tx.conn, document_id)
                await self._index.relabel(tx, found.agent_id, "chunk", ids, visibility)
                if by is not None:
                    changes = {"visibility": visibility}
                    await by.add(tx.conn, "document.update", document_id, changes)
        return replace(found, visibility=visibility)

    async def delete_document(self, document_id: str, by: Actor | None = None) -> Document:
        """Removes the document with its chunks, their text index and their vectors; audited
        (`document.delete`) when `by` is given."""
        async with self._db.write() as tx:
            found = await repo.get(tx.conn, document_id)
            if found is None:
                raise NotFound(f"There is no document '{document_id}'.")
            ids = await repo.chunk_ids(tx.conn, document_id)
            await self._index.delete(tx, found.agent_id, "chunk", ids)
            await repo.delete_document(tx.conn, document_id)
            if by is not None:
                changes = {"agentId": found.agent_id, "name": found.name}
                await by.add(tx.conn, "document.delete", document_id, changes)
        return found

    async def query(
        self,
        agent_id: str,
        query: str,
        top_k: int = 5,
        reranker: Reranker | None = None,
        *,
        members_only: bool = False,
    ) -> QueryResult:
        """Hybrid search: text and vector top 20, fused by RRF, the top 10 re-scored when a
        reranker is given, then the best `top_k` (1 to 20). With `members_only`, only the
        documents shared with channel members are searched."""
        if not 1 <= top_k <= MAX_TOP_K:
            raise Invalid(f"topK must be between 1 and {MAX_TOP_K}.")
        if not query.strip():
            raise Invalid("The query is empty.")
        if not await self._db.read_unit(lambda conn: repo.agent_known(conn, agent_id)):
            raise NotFound(f"There is no agent '{agent_id}'.")
        return await self._search(agent_id, query, top_k, reranker, _only(members_only))

    async def relevant_chunks(
        self,
        agent_id: str,
        text: str,
        k: int = 5,
        reranker: Reranker | None = None,
        *,
        members_only: bool = False,
    ) -> list[ChunkResult]:
        """For prompt injection: nothing, cheaply, when the agent has no documents (that the
        channel may see)."""
        if not text.strip() or k <= 0:
            return []
        visibility = _only(members_only)
        if not await self._db.read_unit(lambda conn: repo.has_any(conn, agent_id, visibility)):
            return []
        found = await self._search(agent_id, text, min(k, MAX_TOP_K), reranker, visibility)
        return found.results

    async def _search(
        self,
        agent_id: str,
        query: str,
        top_k: int,
        reranker: Reranker | None,
        visibility: str | None,
    ) -> QueryResult:
        """In a `retrieval {agent id}` span: the agent's knowledge is the data source."""
        attributes = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": agent_id,
            "gen_ai.request.top_k": top_k,
            "palaver.retrieval.visibility": visibility,
            "gen_ai.retrieval.query.text": tracing.content(query),
        }
        with tracing.span(f"retrieval {agent_id}", attributes) as span:
            found = await self._hybrid(agent_id, query, top_k, reranker, visibility)
            if span.is_recording():
                span.set_attribute("palaver.retrieval.results", len(found.results))
                span.set_attribute("palaver.retrieval.reranked", found.reranked)
                documents = [{"id": r.chunk_id, "score": r.score} for r in found.results]
                kept = tracing.content(documents)
                if kept is not None:
                    span.set_attribute("gen_ai.retrieval.documents", kept)
            return found

    async def _hybrid(
        self,
        agent_id: str,
        query: str,
        top_k: int,
        reranker: Reranker | None,
        visibility: str | None,
    ) -> QueryResult:
        """The text search runs while the query is embedded: on two cores the two overlap."""
        embedder = self._embedder()
        text_search = asyncio.create_task(
            self._index.text_search(agent_id, query, DEPTH, visibility=visibility)
        )
        try:
            vector = await embedder.embed_query(query)
            space = Space(embedder.name, int(vector.shape[0]))
            nearest = await self._index.vector_search(
                agent_id, "chunk", vector, space, DEPTH, type=visibility
            )
        except BaseException:
            text_search.cancel()
            await asyncio.gather(text_search, return_exceptions=True)
            raise
        found = {"text": [h.id for h in await text_search], "vector": [h.id for h in nearest]}
        fused = fuse(found["text"], found["vector"])
        ids = [f.id for f in fused]
        stored = await self._db.read_unit(lambda conn: repo.chunks_by_id(conn, agent_id, ids))
        if visibility is not None:
            stored = {i: c for i, c in stored.items() if c.visibility == visibility}
        results = [
            ChunkResult(
                chunk_id=f.id,
                document_id=stored[f.id].document_id,
                document_name=stored[f.id].document_name,
                content=stored[f.id].content,
                heading_path=stored[f.id].heading_path,
                page=stored[f.id].page,
                score=f.score,
                text_rank=f.text_rank,
                vector_rank=f.vector_rank,
            )
            for f in fused
            if f.id in stored
        ]
        reranked = False
        if reranker is not None and results:
            head = results[:RERANK_DEPTH]
            grades = await reranker.grade(query, [r.content for r in head])
            if grades is not None:
                order = sorted(range(len(head)), key=lambda i: -grades[i])
                graded = [replace(head[i], relevance=grades[i]) for i in order]
                results = graded + results[RERANK_DEPTH:]
                reranked = True
        return QueryResult(results[:top_k], reranked)

    async def stale(self, agent_id: str) -> list[str]:
        """Chunks whose vectors another embedder made (see `reindex.reindex_agent`)."""
        space = await current_space(self._embedder())
        return await self._index.stale_ids(agent_id, "chunk", space)

    async def reembed(self, agent_id: str, ids: Sequence[str]) -> None:
        async with self._db.read() as conn:
            stored = await repo.load_chunks(conn, agent_id, ids)
        if not stored:
            return
        chosen = list(stored.values())
        embedder = self._embedder()
        vectors = await embedder.embed([embedding_text(c.context, c.content) for c in chosen])
        space = Space(embedder.name, int(vectors.shape[1]))
        import numpy as np

        async with self._db.write() as tx:
            still = await repo.load_chunks(tx.conn, agent_id, [c.id for c in chosen])
            keep = [i for i, c in enumerate(chosen) if c.id in still]
            entries = [Entry(chosen[i].id, type=still[chosen[i].id].visibility) for i in keep]
            await self._index.put(
                tx, agent_id, "chunk", entries, vectors[np.array(keep, int)], space
            )


def _reason(error: Exception) -> str:
    """What the document list says of a failed ingest: the readable reasons our own errors and
    providers give, never an internal one."""
    if isinstance(error, (DomainError, ProviderError)):
        return f"Indexing failed: {error}"
    return "Indexing failed on the server; try again."


def _audited(document: Document) -> dict[str, Any]:
    """What the audit log keeps of a new document: its name and size, never its text."""
    return {
        "agentId": document.agent_id,
        "name": document.name,
        "kind": document.kind,
        "bytes": document.bytes,
        "visibility": document.visibility,
    }


def _check_visibility(visibility: str) -> None:
    if visibility not in VISIBILITIES:
        raise Invalid(f"The visibility must be one of {', '.join(VISIBILITIES)}.")


def _only(members_only: bool) -> str | None:
    """The visibility a search is limited to, or None for every document."""
    return "members" if members_only else None
