"""The SearchIndex port: full-text search over chunks and vector search over chunks and memories.

Content rows (documents, chunks, memories) belong to their services; the index owns the
vectors and the full-text index of chunks, and answers searches. The service stores chunks,
then calls `add_text` and `put` in the same transaction, and `delete` before deleting chunks
(SQLite keeps one FTS5 table per agent, which must be told the text it forgets). Writes take
the caller's transaction, and an adapter's in-memory state changes only once that
transaction has committed; what another node changed reaches it through `on_event`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from palaver.bus.base import Event
from palaver.store.db import Tx

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Kind = Literal["chunk", "memory"]
KINDS: tuple[Kind, ...] = ("chunk", "memory")


@dataclass(frozen=True)
class Space:
    """The embedder and dimension that made a vector; vectors of another space are stale."""

    embedder: str
    dim: int


@dataclass(frozen=True)
class Entry:
    """An item to index; `channel_id` and `type` are the filters: a memory's channel and type,
    a chunk's document visibility as `type` (and no channel)."""

    id: str
    channel_id: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    """Cosine similarity for vector search; BM25 relevance (higher is better) for text search."""


@dataclass(frozen=True)
class IndexStatus:
    total: int
    stale: int
    """Vectors of another space: excluded from vector search until re-embedded."""


class SearchIndex(Protocol):
    async def put(
        self,
        tx: Tx,
        agent_id: str,
        kind: Kind,
        entries: Sequence[Entry],
        vectors: NDArray[np.float32],
        space: Space,
    ) -> None:
        """Insert or replace the vectors of `entries` (one row of `vectors` each)."""
        ...

    async def relabel(
        self, tx: Tx, agent_id: str, kind: Kind, ids: Sequence[str], type: str | None
    ) -> None:
        """Change the `type` filter of indexed items, such as chunks whose document's
        visibility changed, without re-embedding them."""
        ...

    async def add_text(self, tx: Tx, agent_id: str, document_ids: Sequence[str]) -> None:
        """Index the text (context and content) of the documents' chunks, stored in `tx`."""
        ...

    async def delete(self, tx: Tx, agent_id: str, kind: Kind, ids: Sequence[str]) -> None:
        """Remove the items' vectors, and for chunks their text too: call it while the chunk
        rows still exist."""
        ...

    async def drop_agent(self, tx: Tx, agent_id: str) -> None:
        """Remove everything indexed for the agent; call it in the transaction deleting it."""
        ...

    async def text_search(
        self, agent_id: str, query: str, limit: int, *, visibility: str | None = None
    ) -> list[Hit]:
        """Chunks only, best first; with `visibility`, only chunks of documents that have it."""
        ...

    async def vector_search(
        self,
        agent_id: str,
        kind: Kind,
        vector: NDArray[np.float32],
        space: Space,
        limit: int,
        *,
        channel_id: str | None = None,
        type: str | None = None,
        tx: Tx | None = None,
    ) -> list[Hit]:
        """Exact cosine over the agent's current vectors, best first; `channel_id` and `type`
        restrict memories to those learned in that channel or of that type, and `type` chunks
        to those of documents of that visibility. With `tx`, a write transaction, the search
        sees every write committed before it on any node (the memory write rule compares
        inside its transaction)."""
        ...

    async def status(self, agent_id: str, space: Space) -> dict[Kind, IndexStatus]: ...

    async def stale_ids(self, agent_id: str, kind: Kind, space: Space) -> list[str]:
        """Items whose vector was made in another space, oldest first."""
        ...

    def forget(self, agent_id: str) -> None:
        """Drop in-memory state for the agent (another node deleted it, or to free memory)."""
        ...

    def on_event(self, topic: str, event: Event) -> None:
        """The bus listener: forgets in-memory state that another node's change made stale."""
        ...
