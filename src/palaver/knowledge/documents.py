"""Documents and chunks: their records and the SQL that stores them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.domain import iso
from palaver.knowledge.chunk import Chunk, chunk_context, document_title
from palaver.store.tables.core import agents
from palaver.store.tables.knowledge import chunks, documents

Visibility = Literal["owner", "members"]
VISIBILITIES: tuple[str, ...] = ("owner", "members")
Status = Literal["indexing", "ready", "failed"]
INTERRUPTED = "Indexing was interrupted by a restart; upload the file again."
"""`owner`: only conversations without guests may draw on the document; `members`: channels
with guests too. New documents are the owner's."""


@dataclass(frozen=True)
class Document:
    id: str
    agent_id: str
    name: str
    kind: str
    bytes: int
    pages: int | None
    chunks: int
    content_hash: str
    created_at: datetime
    visibility: str = "owner"
    status: str = "ready"
    error: str | None = None

    def as_json(self, done: int | None = None) -> dict[str, Any]:
        """`done`: the chunks embedded so far, while indexing (none before the first batch)."""
        if done is None:
            done = self.chunks if self.status == "ready" else 0
        return {
            "id": self.id,
            "agentId": self.agent_id,
            "name": self.name,
            "kind": self.kind,
            "bytes": self.bytes,
            "pages": self.pages,
            "chunks": self.chunks,
            "visibility": self.visibility,
            "createdAt": iso(self.created_at),
            "status": self.status,
            "error": self.error,
            "progress": {"done": done, "total": self.chunks},
        }


@dataclass(frozen=True)
class StoredChunk:
    id: str
    document_id: str
    document_name: str
    heading_path: tuple[str, ...]
    page: int | None
    content: str
    visibility: str
    context: str
    """The document's title and heading path, embedded with the content (see `chunks`)."""


def _document(row: Any) -> Document:
    return Document(
        id=row.id,
        agent_id=row.agent_id,
        name=row.name,
        kind=row.kind,
        bytes=row.bytes,
        pages=row.pages,
        chunks=row.chunks,
        content_hash=row.content_hash,
        created_at=row.created_at,
        visibility=row.visibility,
        status=row.status,
        error=row.error,
    )


def agent_known(conn: Connection, agent_id: str) -> bool:
    """For read units (one hop); `agent_exists` is the same on an async connection."""
    return conn.execute(select(agents.c.id).where(agents.c.id == agent_id)).first() is not None


async def agent_exists(conn: AsyncConnection, agent_id: str) -> bool:
    return await conn.run_sync(agent_known, agent_id)


async def get(conn: AsyncConnection, document_id: str) -> Document | None:
    row = (await conn.execute(select(documents).where(documents.c.id == document_id))).first()
    return _document(row) if row else None


async def find_by_hash(conn: AsyncConnection, agent_id: str, content_hash: str) -> Document | None:
    query = select(documents).where(
        documents.c.agent_id == agent_id, documents.c.content_hash == content_hash
    )
    row = (await conn.execute(query)).first()
    return _document(row) if row else None


async def list_for(conn: AsyncConnection, agent_id: str) -> list[Document]:
    query = (
        select(documents)
        .where(documents.c.agent_id == agent_id)
        .order_by(documents.c.created_at.desc(), documents.c.id.desc())
    )
    return [_document(row) for row in await conn.execute(query)]


def has_any(conn: Connection, agent_id: str, visibility: str | None = None) -> bool:
    query = select(documents.c.id).where(documents.c.agent_id == agent_id)
    if visibility is not None:
        query = query.where(documents.c.visibility == visibility)
    return conn.execute(query.limit(1)).first() is not None


async def set_visibility(conn: AsyncConnection, document_id: str, visibility: str) -> None:
    await conn.execute(
        update(documents).where(documents.c.id == document_id).values(visibility=visibility)
    )


async def insert_with_chunks(
    conn: AsyncConnection, document: Document, parts: Sequence[tuple[str, Chunk]]
) -> None:
    await insert_record(conn, document)
    await insert_chunks(conn, document, parts)


async def insert_record(
    conn: AsyncConnection, document: Document, node_id: str | None = None
) -> None:
    """The document without its chunks: what the list shows while they are embedded by the
    node `node_id`."""
    await conn.execute(
        insert(documents).values(
            id=document.id,
            agent_id=document.agent_id,
            name=document.name,
            kind=document.kind,
            bytes=document.bytes,
            pages=document.pages,
            chunks=document.chunks,
            content_hash=document.content_hash,
            created_at=document.created_at,
            visibility=document.visibility,
            status=document.status,
            error=document.error,
            node_id=node_id,
        )
    )


async def insert_chunks(
    conn: AsyncConnection, document: Document, parts: Sequence[tuple[str, Chunk]]
) -> None:
    title = document_title(document.name)
    rows = [
        {
            "id": chunk_id,
            "agent_id": document.agent_id,
            "document_id": document.id,
            "ordinal": chunk.ordinal,
            "heading_path": list(chunk.heading_path),
            "page": chunk.page,
            "tokens": chunk.tokens,
            "context": chunk_context(title, chunk.heading_path),
            "content": chunk.content,
        }
        for chunk_id, chunk in parts
    ]
    for start in range(0, len(rows), 500):
        await conn.execute(insert(chunks), rows[start : start + 500])


async def chunk_ids(conn: AsyncConnection, document_id: str) -> list[str]:
    query = select(chunks.c.id).where(chunks.c.document_id == document_id)
    return list((await conn.execute(query)).scalars())


async def delete_document(conn: AsyncConnection, document_id: str) -> None:
    """Its chunks go by cascade; remove their vectors and full-text rows first (the index's
    `delete`), since the SQLite text index reads the rows it removes."""
    await conn.execute(delete(documents).where(documents.c.id == document_id))


async def load_chunks(
    conn: AsyncConnection, agent_id: str, ids: Sequence[str]
) -> dict[str, StoredChunk]:
    return await conn.run_sync(chunks_by_id, agent_id, ids)


def chunks_by_id(conn: Connection, agent_id: str, ids: Sequence[str]) -> dict[str, StoredChunk]:
    """Looked up by id alone, the agent checked on the rows: with an agent condition in SQL,
    SQLite walks the agent's index (100,000 rows: 120 ms) instead of the ids' (0.5 ms)."""
    if not ids:
        return {}
    query = (
        select(
            chunks.c.id,
            chunks.c.agent_id,
            chunks.c.document_id,
            documents.c.name,
            documents.c.visibility,
            chunks.c.heading_path,
            chunks.c.page,
            chunks.c.context,
            chunks.c.content,
        )
        .join(documents, documents.c.id == chunks.c.document_id)
        .where(chunks.c.id.in_(list(ids)))
    )
    return {
        row.id: StoredChunk(
            id=row.id,
            document_id=row.document_id,
            document_name=row.name,
            heading_path=tuple(row.heading_path),
            page=row.page,
            content=row.content,
            visibility=row.visibility,
            context=row.context,
        )
        for row in conn.execute(query)
        if row.agent_id == agent_id
    }


async def set_status(
    conn: AsyncConnection, document_id: str, status: str, error: str | None = None
) -> None:
    await conn.execute(
        update(documents).where(documents.c.id == document_id).values(status=status, error=error)
    )


async def fail_interrupted(conn: AsyncConnection, which: ColumnElement[bool] | None) -> int:
    """Documents whose node stopped or died while they were `indexing` (those `which`
    selects, all if None) never finish: say so, rather than spin forever."""
    query = update(documents).where(documents.c.status == "indexing")
    if which is not None:
        query = query.where(which)
    result = await conn.execute(query.values(status="failed", error=INTERRUPTED))
    return result.rowcount
