"""The SearchIndex on PostgreSQL: a `tsvector` per chunk with a GIN index for text, pgvector
for vectors. Nothing is cached in the process, so every node answers from the database alone.

Text: `chunks.tsv` (the 'english' configuration over context and content) is written by
`add_text`, so that, as on SQLite, a chunk is found by its words only once its document is
indexed. Each query word (the SQLite adapter's query words, its stop words dropped) becomes a
`plainto_tsquery` of its own, so user text is never tsquery syntax, and the words are ORed.
PostgreSQL's ranking has no IDF, so the score is BM25-like: each word's `ts_rank` weighted by
its IDF among the agent's own chunks, and, as on SQLite, words in half of those chunks or more
are left out of scoring. Every statement is bound to one agent (`agent_id`), whose chunk
counts alone weigh the words.

A score is a sum of one part per word (the word's `ts_rank` in each chunk holding it), so, as
the SQLite index keeps FTS5's (`impacts`), each word's part is fetched once, as two arrays
(the chunks' `seq` and rank), kept, and a query adds its words' parts, IDF-weighted, in numpy:
ranking every chunk holding a common word in SQL took 160 ms at 100,000 chunks. The parts
stay valid while the agent's `text_stamps` counter, moved in the transaction of every change
to its chunks' words and read in the same read as the parts, stays where it was; so each node
keeps its own and none can answer from a stale one.

Vectors: `vectors.embedding` is a `vector` of no fixed size (embedders differ), beside the
float32 bytes the SQLite adapter reads. Below `EXACT_BELOW` vectors of one agent and kind, or
with a channel or type filter, the search is exact (the agent's rows by their btree, then
cosine to each). Above it, for the dimensions of `HNSW_DIMS`, the query takes the partial HNSW
index of its dimension (`embedding::vector(384)`, `WHERE dim = 384`), which covers every
agent; pgvector 0.6 filters its candidates after the scan, so when fewer than `limit` of them
are the agent's, the search is run again exactly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import log
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, and_, case, func, not_, select, text

from palaver.bus.base import CONTROL, Event
from palaver.knowledge.index.base import KINDS, Entry, Hit, IndexStatus, Kind, Space
from palaver.knowledge.index.sqlite import (
    DEFAULT_CACHE_BYTES,
    TEXT_SHARE,
    query_terms,
    worth_scoring,
)
from palaver.store.db import Database, Tx
from palaver.store.tables.knowledge import vectors as vector_rows

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from palaver.knowledge.index.impacts import Part, TextParts

TSV = "to_tsvector('english', context) || to_tsvector('english', content)"
"""A chunk's words: its context (title and headings) and content, stemmed by Snowball English,
PostgreSQL's stop words dropped."""
HNSW_DIMS = (384, 768, 1024, 1536)
"""Dimensions with a partial HNSW index (migration 0009); others are always searched exactly."""
EXACT_BELOW = 10_000
"""Vectors of one agent and kind below which the search is exact: some 10 ms at 384
dimensions, with no recall lost."""
EF_SEARCH = 200
"""HNSW candidates per search: enough that an agent holding a fair share of the rows of its
dimension gets its `limit` without the exact fallback."""

SEARCH_COLUMNS = frozenset({("chunks", "tsv"), ("vectors", "embedding")})
SEARCH_INDEXES = frozenset({"ix_chunks_tsv", *(f"ix_vectors_hnsw_{d}" for d in HNSW_DIMS)})
"""What migration 0009 adds on PostgreSQL alone, outside the table definitions."""

_BATCH = 500
_AGENT_CHUNKS = text("SELECT coalesce(sum(chunks), 0) FROM documents WHERE agent_id = :agent")
_PUT = text(
    "INSERT INTO vectors (item_id, agent_id, kind, channel_id, type, embedder, dim, data, "
    "embedding) VALUES (:item_id, :agent_id, :kind, :channel_id, :type, :embedder, :dim, :data, "
    "CAST(CAST(:embedding AS text) AS vector)) ON CONFLICT (item_id) DO UPDATE SET "
    "channel_id = excluded.channel_id, type = excluded.type, embedder = excluded.embedder, "
    "dim = excluded.dim, data = excluded.data, embedding = excluded.embedding"
)
_ADD_TEXT_SQL = "UPDATE chunks SET tsv = {tsv} WHERE agent_id = :agent AND document_id = ANY(:ids)"
_ADD_TEXT = text(_ADD_TEXT_SQL.format(tsv=TSV))
_REMOVE_TEXT = text("UPDATE chunks SET tsv = NULL WHERE agent_id = :agent AND id = ANY(:ids)")
_DROP_TEXT = text("UPDATE chunks SET tsv = NULL WHERE agent_id = :agent AND tsv IS NOT NULL")
_DROP_VECTORS = text("DELETE FROM vectors WHERE agent_id = :agent")
_DELETE = text(
    "DELETE FROM vectors WHERE agent_id = :agent AND kind = :kind AND item_id = ANY(:ids)"
)
_RELABEL = text(
    "UPDATE vectors SET type = :type "
    "WHERE agent_id = :agent AND kind = :kind AND item_id = ANY(:ids)"
)
_STAMP = text("SELECT stamp FROM text_stamps WHERE agent_id = :agent")
_MOVE_STAMP = text(
    "INSERT INTO text_stamps (agent_id, stamp) SELECT id, 1 FROM agents WHERE id = :agent "
    "ON CONFLICT (agent_id) DO UPDATE SET stamp = text_stamps.stamp + 1"
)
"""Moves the agent's stamp, made at 1 if it has none; nothing for an agent whose row is gone
in this transaction (its stamp went with it, and a missing stamp reads as 0)."""
_PART = text(
    "SELECT seq, ts_rank(tsv, plainto_tsquery('english', :word), 1) FROM chunks "
    "WHERE agent_id = :agent AND tsv @@ plainto_tsquery('english', :word)"
)
"""A word's part: the rank of each of the agent's chunks holding it (the GIN index finds them,
the agent's btree keeps the others out)."""
_CHUNK_IDS = text("SELECT seq, id FROM chunks WHERE seq = ANY(:seqs)")
_SHARED_CHUNK_IDS = text(
    "SELECT c.seq, c.id FROM chunks AS c JOIN documents AS d ON d.id = c.document_id "
    "WHERE c.seq = ANY(:seqs) AND d.visibility = :visibility"
)
TEXT_AGENTS_SHARE = 4
"""All agents' kept parts hold at most this fraction of `cache_bytes` (each agent's at most
`TEXT_SHARE`, as on SQLite); the least recently searched agents' go first."""
_TERM_DOCS = "SELECT {columns} FROM chunks WHERE agent_id = :agent AND tsv @@ ({any})"
_NEAREST = (
    "SELECT item_id, {distance} AS distance FROM vectors "
    "WHERE agent_id = :agent AND kind = :kind AND embedder = :embedder AND dim = :dim "
    "AND (CAST(:channel AS text) IS NULL OR channel_id = :channel) "
    "AND (CAST(:type AS text) IS NULL OR type = :type) "
    "ORDER BY {order} LIMIT :limit"
)
"""The HNSW path orders by the distance alone: a tie-break on `item_id` keeps the planner off
the index (it cannot give that order), and the query then scans every row of the dimension."""
_CUSTOM_PLANS = text("SET LOCAL plan_cache_mode = force_custom_plan")
"""asyncpg prepares each statement; after five runs PostgreSQL may keep a generic plan, in
which `dim = :dim` no longer matches a partial HNSW index and the query vector's text is cast
again for every row (some 4 s at 100,000 rows). A plan made for each run's values avoids both."""
_COUNT = text(
    "SELECT count(*) FROM (SELECT 1 FROM vectors WHERE agent_id = :agent AND kind = :kind "
    "AND embedder = :embedder AND dim = :dim LIMIT :enough) AS found"
)


class PostgresSearchIndex:
    def __init__(
        self,
        db: Database,
        exact_below: int = EXACT_BELOW,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self._db = db
        self._exact_below = exact_below
        self._cache_bytes = cache_bytes
        self._term_counts: dict[str, _TermCounts] = {}
        self._parts: OrderedDict[str, TextParts] = OrderedDict()
        """Each agent's kept word parts, least recently searched first."""

    async def put(
        self,
        tx: Tx,
        agent_id: str,
        kind: Kind,
        entries: Sequence[Entry],
        vectors: NDArray[np.float32],
        space: Space,
    ) -> None:
        if vectors.shape != (len(entries), space.dim):
            raise ValueError(f"expected {len(entries)} vectors of {space.dim}, got {vectors.shape}")
        import numpy as np  # on the first write of vectors, not at start

        rows = np.ascontiguousarray(vectors, dtype=np.float32)
        values = [
            {
                "item_id": entry.id,
                "agent_id": agent_id,
                "kind": kind,
                "channel_id": entry.channel_id,
                "type": entry.type,
                "embedder": space.embedder,
                "dim": space.dim,
                "data": row.tobytes(),
                "embedding": _literal(row),
            }
            for entry, row in zip(entries, rows, strict=True)
        ]
        for start in range(0, len(values), _BATCH):
            await tx.conn.execute(_PUT, values[start : start + _BATCH])

    async def relabel(
        self, tx: Tx, agent_id: str, kind: Kind, ids: Sequence[str], type: str | None
    ) -> None:
        if ids:
            params = {"agent": agent_id, "kind": kind, "ids": list(ids), "type": type}
            await tx.conn.execute(_RELABEL, params)

    async def add_text(self, tx: Tx, agent_id: str, document_ids: Sequence[str]) -> None:
        if document_ids:
            await tx.conn.execute(_ADD_TEXT, {"agent": agent_id, "ids": list(document_ids)})
            await tx.conn.execute(_MOVE_STAMP, {"agent": agent_id})

    async def delete(self, tx: Tx, agent_id: str, kind: Kind, ids: Sequence[str]) -> None:
        if not ids:
            return
        if kind == "chunk":
            await tx.conn.execute(_REMOVE_TEXT, {"agent": agent_id, "ids": list(ids)})
            await tx.conn.execute(_MOVE_STAMP, {"agent": agent_id})
        await tx.conn.execute(_DELETE, {"agent": agent_id, "kind": kind, "ids": list(ids)})

    async def drop_agent(self, tx: Tx, agent_id: str) -> None:
        await tx.conn.execute(_DROP_TEXT, {"agent": agent_id})
        await tx.conn.execute(_MOVE_STAMP, {"agent": agent_id})
        await tx.conn.execute(_DROP_VECTORS, {"agent": agent_id})

        async def forget() -> None:
            self.forget(agent_id)

        tx.on_commit(forget)

    def forget(self, agent_id: str) -> None:
        self._term_counts.pop(agent_id, None)
        self._parts.pop(agent_id, None)

    def on_event(self, topic: str, event: Event) -> None:
        """Only the term counts live here, and another node's writes move them as this node's
        do (they are checked against the chunk count on every search); a deleted agent's go."""
        if topic == CONTROL and event.get("type") == "agent_deleted":
            self.forget(event["agentId"])

    async def text_search(
        self, agent_id: str, query: str, limit: int, *, visibility: str | None = None
    ) -> list[Hit]:
        words = [t.strip('"') for t in query_terms(query)]
        if not words or limit <= 0:
            return []

        def search(conn: Connection) -> list[Hit]:
            # numpy and the ranked parts where text is first searched, not at start.
            from palaver.knowledge.index.impacts import Part, best

            stamp = int(conn.execute(_STAMP, {"agent": agent_id}).scalar() or 0)
            weights = _weights(conn, agent_id, words, self._term_counts)
            if not weights:
                return []
            parts = self._kept_parts(agent_id, stamp)
            weighted = []
            for word, weight in weights.items():
                part = parts.kept(word)
                if part is None:
                    part = _fetch_part(conn, agent_id, word)
                    parts.keep(word, part)
                weighted.append(Part(part.rows, part.scores * weight))
            if visibility is None:
                return _hits(conn, _CHUNK_IDS, {}, best(weighted, limit))
            return _shared_hits(conn, weighted, limit, visibility)

        hits = await self._db.read_unit(search)
        self._trim_parts()
        return hits

    def _kept_parts(self, agent_id: str, stamp: int) -> TextParts:
        """The agent's kept parts if they were fetched under `stamp`, else a new, empty set."""
        from palaver.knowledge.index.impacts import TextParts

        parts = self._parts.get(agent_id)
        if parts is None or parts.stamp != stamp:
            parts = self._parts[agent_id] = TextParts(stamp, self._cache_bytes // TEXT_SHARE)
        self._parts.move_to_end(agent_id)
        return parts

    def _trim_parts(self) -> None:
        """Drop the least recently searched agents' parts while all hold too many bytes."""
        budget = self._cache_bytes // TEXT_AGENTS_SHARE
        while len(self._parts) > 1 and sum(p.nbytes for p in self._parts.values()) > budget:
            self._parts.popitem(last=False)

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
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != space.dim:
            raise ValueError(f"query vector has {query.shape[0]} dimensions, not {space.dim}")
        if limit <= 0:
            return []
        params: dict[str, Any] = {
            "agent": agent_id,
            "kind": kind,
            "embedder": space.embedder,
            "dim": space.dim,
            "query": _literal(query),
            "limit": limit,
            "channel": channel_id,
            "type": type,
            "enough": self._exact_below,
        }
        approximate = (
            space.dim in HNSW_DIMS and channel_id is None and type is None and limit <= EF_SEARCH
        )

        def search(conn: Connection) -> list[Hit]:
            conn.execute(_CUSTOM_PLANS)
            if approximate and conn.execute(_COUNT, params).scalar_one() >= self._exact_below:
                conn.execute(text(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}"))
                hits = _nearest(conn, params, space.dim)
                if len(hits) == limit:
                    return hits
            return _nearest(conn, params, None)

        if tx is not None:
            # READ COMMITTED, after the transaction's lock: sees what any node committed first.
            return await tx.conn.run_sync(search)
        return await self._db.read_unit(search)

    async def status(self, agent_id: str, space: Space) -> dict[Kind, IndexStatus]:
        stale = func.sum(case((_stale(space), 1), else_=0))
        query = (
            select(vector_rows.c.kind, func.count(), stale)
            .where(vector_rows.c.agent_id == agent_id)
            .group_by(vector_rows.c.kind)
        )
        found: dict[str, IndexStatus] = {}
        async with self._db.read() as conn:
            for kind, total, stale_count in await conn.execute(query):
                found[kind] = IndexStatus(total=int(total), stale=int(stale_count or 0))
        return {kind: found.get(kind, IndexStatus(0, 0)) for kind in KINDS}

    async def stale_ids(self, agent_id: str, kind: Kind, space: Space) -> list[str]:
        query = (
            select(vector_rows.c.item_id)
            .where(vector_rows.c.agent_id == agent_id, vector_rows.c.kind == kind, _stale(space))
            .order_by(vector_rows.c.item_id)
        )
        async with self._db.read() as conn:
            return list((await conn.execute(query)).scalars())


def _nearest(conn: Connection, params: dict[str, Any], hnsw_dim: int | None) -> list[Hit]:
    """The `limit` nearest rows: through the HNSW index of `hnsw_dim` (whose expression the
    cast matches), or exactly, with an expression no index has."""
    statement = text(nearest_sql(hnsw_dim))
    return [Hit(row.item_id, 1.0 - float(row.distance)) for row in conn.execute(statement, params)]


def nearest_sql(hnsw_dim: int | None) -> str:
    """The statement `_nearest` sends; exact answers break ties by id, the index's cannot."""
    if hnsw_dim is None:
        distance = "embedding <=> CAST(CAST(:query AS text) AS vector)"
        return _NEAREST.format(distance=distance, order=f"{distance}, item_id")
    distance = f"embedding::vector({hnsw_dim}) <=> CAST(CAST(:query AS text) AS vector({hnsw_dim}))"
    return _NEAREST.format(distance=distance, order=distance)


def fill_search_columns(conn: Connection) -> int:
    """Derive `chunks.tsv` and `vectors.embedding` where they are empty, as migration 0009 does
    for older rows: for a database whose rows were copied in without them (`palaver
    migrate-db`). Returns the vectors filled."""
    import numpy as np

    conn.execute(_FILL_TEXT)
    filled = 0
    while rows := conn.execute(_UNFILLED).all():
        conn.execute(
            _FILL_VECTOR,
            [
                {"item_id": item_id, "embedding": _literal(np.frombuffer(data, dtype=np.float32))}
                for item_id, data in rows
            ],
        )
        filled += len(rows)
    return filled


_FILL_TEXT = text(f"UPDATE chunks SET tsv = {TSV} WHERE tsv IS NULL")  # noqa: S608 (constants)
_UNFILLED = text("SELECT item_id, data FROM vectors WHERE embedding IS NULL LIMIT 500")
_FILL_VECTOR = text(
    "UPDATE vectors SET embedding = CAST(CAST(:embedding AS text) AS vector) "
    "WHERE item_id = :item_id"
)


def _literal(row: NDArray[np.float32]) -> str:
    """pgvector's text form; each float32 printed so that it reads back as itself."""
    return "[" + ",".join(map(str, row.tolist())) + "]"


def _fetch_part(conn: Connection, agent_id: str, word: str) -> Part:
    """The word's rank in each of the agent's chunks holding it, by ascending `seq`."""
    import numpy as np

    from palaver.knowledge.index.impacts import Part

    found = np.array(
        [tuple(row) for row in conn.execute(_PART, {"agent": agent_id, "word": word})],
        dtype=[("row", np.int64), ("score", np.float64)],
    )
    found.sort(order="row")
    return Part(np.ascontiguousarray(found["row"]), np.ascontiguousarray(found["score"]))


def _hits(
    conn: Connection, statement: Any, params: dict[str, Any], ranked: list[tuple[int, float]]
) -> list[Hit]:
    """`ranked` (seq, score) as hits on the chunks `statement` finds, best first."""
    if not ranked:
        return []
    found = conn.execute(statement, {**params, "seqs": [seq for seq, _ in ranked]})
    ids = {int(seq): chunk_id for seq, chunk_id in found}
    return [Hit(ids[seq], score) for seq, score in ranked if seq in ids]


def _shared_hits(conn: Connection, parts: list[Part], limit: int, visibility: str) -> list[Hit]:
    """The best `limit` chunks of documents of `visibility`: the ranking walked in growing
    slices, each filtered in SQL, until `limit` are found or every chunk holding a word is
    seen; the filter applies before the limit, as a join would."""
    import numpy as np

    from palaver.knowledge.index.impacts import best

    holding = len(np.unique(np.concatenate([p.rows for p in parts]))) if parts else 0
    want = limit * 4
    while True:
        ranked = best(parts, want)
        hits = _hits(conn, _SHARED_CHUNK_IDS, {"visibility": visibility}, ranked)
        if len(hits) >= limit or want >= holding:
            return hits[:limit]
        want *= 4


def _stale(space: Space) -> ColumnElement[bool]:
    return not_(and_(vector_rows.c.embedder == space.embedder, vector_rows.c.dim == space.dim))


@dataclass
class _TermCounts:
    """Chunk counts of an agent's words, kept (as the SQLite adapter does) until its chunk
    count moves by a tenth: counting a common word reads every chunk holding it."""

    chunks: int
    docs: dict[str, int] = field(default_factory=dict)

    def fresh(self, chunks: int) -> bool:
        return abs(chunks - self.chunks) <= self.chunks // 10


def _weights(
    conn: Connection, agent_id: str, words: list[str], cache: dict[str, _TermCounts]
) -> dict[str, float]:
    """The words worth scoring, with BM25's IDF among the agent's chunks: those in fewer than
    half of them, or, when every word is that common, the rarest, unless it is in
    `UNHELPFUL_ROWS` rows or more (see `worth_scoring`)."""
    if len(words) < 2:
        return dict.fromkeys(words, 1.0)
    chunks = int(conn.execute(_AGENT_CHUNKS, {"agent": agent_id}).scalar_one())
    counts = cache.get(agent_id)
    if counts is None or not counts.fresh(chunks):
        counts = cache[agent_id] = _TermCounts(chunks)
    unknown = [w for w in words if w not in counts.docs]
    if unknown:
        queries = [f"plainto_tsquery('english', :t{i})" for i in range(len(unknown))]
        columns = ", ".join(f"count(*) FILTER (WHERE tsv @@ {q})" for q in queries)
        row = conn.execute(
            text(_TERM_DOCS.format(columns=columns, any=" || ".join(queries))),
            {"agent": agent_id, **{f"t{i}": w for i, w in enumerate(unknown)}},
        ).one()
        counts.docs.update({w: int(n) for w, n in zip(unknown, row, strict=True)})
    docs = {w: counts.docs[w] for w in words}
    chosen = worth_scoring(docs, chunks)
    return {w: max(log(1 + (chunks - docs[w] + 0.5) / (docs[w] + 0.5)), 1e-6) for w in chosen}
