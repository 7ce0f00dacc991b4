"""The SearchIndex on SQLite: FTS5 with BM25 for text, exact cosine in numpy for vectors.

Each agent's current vectors of a kind are read into one float32 matrix on first search and
then kept in step by the writes of this process, applied only after their transaction commits.
A write that commits while a matrix is being read is queued and replayed once the read is
done, so a matrix never misses a write. Several nodes on one file (with Redis) are told of each
other's writes: given the bus, each write announces its agent and kind after commit, and the
other nodes drop that matrix, to be read again on its next search. Below a million chunks an
exact scan is fast enough (about 7 to 12 ms for 100,000 x 384; large matrices scan an int8
copy first and re-score exactly) that no approximate index is worth its recall loss. Text
search adds up each term's BM25 part, asked of FTS5 once and kept until the agent's table
changes (`impacts`), which other nodes' writes change too.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, cast

import anyio
from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    case,
    delete,
    func,
    not_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.bus.base import CONTROL, Event, EventBus
from palaver.ids import new_id
from palaver.knowledge.index.base import KINDS, Entry, Hit, IndexStatus, Kind, Space
from palaver.knowledge.index.fts_terms import fts_terms
from palaver.store.db import Database, Tx
from palaver.store.tables.knowledge import fts_ddl, fts_drop, fts_table
from palaver.store.tables.knowledge import vectors as vector_rows

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from palaver.knowledge.index.impacts import TextParts
    from palaver.knowledge.index.matrix import Snapshot, VectorMatrix

# numpy and the modules built on it (matrices, the int8 scan, ranked text parts) are imported
# where an agent's vectors or text are first searched or written, not at start: a server that
# serves no knowledge base or memory never loads them.

log = logging.getLogger(__name__)

THREAD_THRESHOLD = 1_000_000
"""Matrix cells (rows x dim) from which a scan or a load goes to a worker thread: below it the
hop costs more than the scan (some 2,600 rows of 384 take well under a millisecond)."""

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    (  # noqa: SIM905
        "a an and are as at be but by can do does for from has have how i if in into is it its "
        "me my of on or our so that the their then there these this to was we what when where "
        "which who why will with you your"
    ).split()
)
_MAX_TERMS = 32
_BATCH = 500
_LOAD_BATCH = 4096
"""Vector rows read at a time into a loading matrix: a 100,000-row matrix then needs 6 MB
besides itself, where reading every row first took three times its size."""

_CHUNK_IDS = "SELECT seq, id FROM chunks WHERE agent_id = :agent_id AND seq IN ({seqs})"
_SHARED_TEXT_SEARCH = (
    "SELECT c.id AS id, bm25({table}) AS rank FROM {table} "
    "JOIN chunks AS c ON c.seq = {table}.rowid "
    "JOIN documents AS d ON d.id = c.document_id "
    "WHERE {table} MATCH :query AND c.agent_id = :agent_id AND d.visibility = :visibility "
    "ORDER BY rank LIMIT :limit"
)
"""Each matching row is checked by primary key, and the limit applies after the filter, so
the chunks a caller may not see neither crowd out the others nor show in ranks."""
_ADD_TEXT = (
    "INSERT INTO {table}(rowid, context, content) SELECT seq, context, content FROM chunks "
    "WHERE document_id IN ({ids})"
)
_REMOVE_TEXT = (
    "INSERT INTO {table}({table}, rowid, context, content) "
    "SELECT 'delete', seq, context, content FROM chunks WHERE id IN ({ids}) AND agent_id = :agent"
)
"""An external-content FTS5 table forgets a row given the values it indexed, read here from
the chunk rows before they are deleted."""
_TERM_DOCS = "SELECT term, doc FROM {table}_vocab WHERE term IN ({terms})"
_AGENT_CHUNKS = text("SELECT coalesce(sum(chunks), 0) FROM documents WHERE agent_id = :agent")
_FTS_EXISTS = text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name")
PACK_INTERVAL_SECONDS = 10.0
"""A matrix gets a new int8 scan at most this often: an agent whose vectors are replaced or
removed between every two searches would otherwise have one made (0.2 s of a core at 100,000
rows) after each; in between, its searches are float32, exact and slower."""
DEFAULT_CACHE_BYTES = 1024 * 1024 * 1024
DEFAULT_IDLE_SECONDS = 3600.0
TEXT_SHARE = 16
"""One agent's kept text parts hold at most this fraction of the cache's bytes (64 MB of the
default 1 GB), so that a stream of new words cannot push every matrix out, and a server
holding one agent of 100,000 chunks stays within 700 MB."""
TEXT = "text"
"""The cache key's second half for an agent's text parts (matrices have their kind)."""

MatrixChange = Callable[["VectorMatrix"], None]


def query_terms(query: str) -> list[str]:
    """The query's words, each quoted so that user text is never FTS5 syntax. Stop words are
    dropped: they would make every row a match while adding nothing to BM25."""
    words = dict.fromkeys(w for w in _WORD.findall(query.casefold()) if w not in _STOPWORDS)
    if not words:
        words = dict.fromkeys(_WORD.findall(query.casefold()))
    return [f'"{w}"' for w in list(words)[:_MAX_TERMS]]


UNHELPFUL_ROWS = 20_000
"""A word in half an agent's chunks or more is not searched by text when it is in this many
rows, even if the query has no other word: FTS5 floors its IDF, so BM25 ranks the rows holding
it by its count and their lengths only, and scoring them costs some 1.1 us a row (145 ms for a
word in all of 100,000 chunks). Vector search still answers such a query."""


def worth_scoring(rows: dict[str, int], chunks: int) -> list[str]:
    """The terms (in query order) found in fewer than half of `chunks` rows. Should none of
    those be found at all, the rarest term that is found joins them: a small agent's every
    word may sit in half its chunks (one of two), and a query must still match by its words;
    unless it is in `UNHELPFUL_ROWS` rows or more, and then no term is worth scoring."""
    half = (chunks + 1) // 2
    chosen = [t for t in rows if rows[t] < half]
    if not any(rows[t] for t in chosen):
        found = [t for t in rows if rows[t]]
        if found:
            rarest = min(found, key=rows.__getitem__)
            if rows[rarest] >= UNHELPFUL_ROWS:
                return []
            chosen = [t for t in rows if t in chosen or t == rarest]
    return chosen or list(rows)[:1]


def index_term(term: str) -> str | None:
    """A quoted query word's term as FTS5 indexes it (`fts_terms`), or None when FTS5 makes
    several terms of it, or none."""
    found = fts_terms(term.strip('"'))
    return found[0] if len(found) == 1 else None


class SqliteSearchIndex:
    def __init__(
        self,
        db: Database,
        thread_threshold: int = THREAD_THRESHOLD,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        bus: EventBus | None = None,
    ) -> None:
        """Matrices are evicted, least recently searched first, while they hold more than
        `cache_bytes` together, and whenever one has not been searched for `idle_seconds`;
        the next search reloads it from the database, with the same answers. `bus` is given
        when other nodes may write the same file: writes are then announced on it."""
        self._db = db
        self._bus = bus
        self._node = new_id("node")
        """Tells this process's announcements from other nodes'."""
        self._thread_threshold = thread_threshold
        self._cache_bytes = cache_bytes
        self._idle_seconds = idle_seconds
        self._clock = clock
        self._matrices: dict[tuple[str, Kind], VectorMatrix] = {}
        self._parts: dict[str, TextParts] = {}
        """Each agent's BM25 parts of the phrases it was searched for (see `impacts`)."""
        self._used: dict[tuple[str, str], float] = {}
        """When each cached matrix or agent's text parts were last searched, least recent
        first."""
        self._loading: dict[tuple[str, Kind], list[MatrixChange]] = {}
        self._locks: dict[tuple[str, Kind], asyncio.Lock] = {}
        self._generations: dict[str, int] = {}
        self._texts: set[str] = set()
        self._term_counts: dict[str, _TermCounts] = {}
        """Agents known to have a text table."""
        self._packing: set[tuple[str, Kind]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._finishing: set[str] = set()

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
        if not entries:
            return
        import numpy as np

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
            }
            for entry, row in zip(entries, rows, strict=True)
        ]
        statement = sqlite_insert(vector_rows)
        statement = statement.on_conflict_do_update(
            index_elements=[vector_rows.c.item_id],
            set_={
                c: statement.excluded[c] for c in ("channel_id", "type", "embedder", "dim", "data")
            },
        )
        for start in range(0, len(values), _BATCH):
            await tx.conn.execute(statement, values[start : start + _BATCH])
        entries = list(entries)
        rows = rows.copy()

        def change(matrix: VectorMatrix) -> None:
            if matrix.space == space:
                matrix.upsert(entries, rows)
            else:
                matrix.remove(e.id for e in entries)

        self._after_commit(tx, agent_id, kind, change)

    async def relabel(
        self, tx: Tx, agent_id: str, kind: Kind, ids: Sequence[str], type: str | None
    ) -> None:
        ids = list(ids)
        for start in range(0, len(ids), _BATCH):
            await tx.conn.execute(
                update(vector_rows)
                .where(
                    vector_rows.c.agent_id == agent_id,
                    vector_rows.c.kind == kind,
                    vector_rows.c.item_id.in_(ids[start : start + _BATCH]),
                )
                .values(type=type)
            )
        self._after_commit(tx, agent_id, kind, lambda matrix: matrix.relabel(ids, type))

    async def add_text(self, tx: Tx, agent_id: str, document_ids: Sequence[str]) -> None:
        document_ids = list(document_ids)
        if not document_ids:
            return
        for statement in fts_ddl(agent_id):
            await tx.conn.exec_driver_sql(statement)
        table = fts_table(agent_id)
        for start in range(0, len(document_ids), _BATCH):
            batch = document_ids[start : start + _BATCH]
            await tx.conn.execute(
                text(_ADD_TEXT.format(table=table, ids=_placeholders("d", batch))),
                _numbered("d", batch),
            )

        async def known() -> None:
            self._texts.add(agent_id)

        tx.on_commit(known)

    async def delete(self, tx: Tx, agent_id: str, kind: Kind, ids: Sequence[str]) -> None:
        ids = list(ids)
        if kind == "chunk" and ids and await self._has_text(tx.conn, agent_id, remember=False):
            table = fts_table(agent_id)
            for start in range(0, len(ids), _BATCH):
                batch = ids[start : start + _BATCH]
                await tx.conn.execute(
                    text(_REMOVE_TEXT.format(table=table, ids=_placeholders("c", batch))),
                    {**_numbered("c", batch), "agent": agent_id},
                )
        for start in range(0, len(ids), _BATCH):
            await tx.conn.execute(
                delete(vector_rows).where(
                    vector_rows.c.agent_id == agent_id,
                    vector_rows.c.kind == kind,
                    vector_rows.c.item_id.in_(ids[start : start + _BATCH]),
                )
            )
        self._after_commit(tx, agent_id, kind, lambda matrix: matrix.remove(ids))

    async def drop_agent(self, tx: Tx, agent_id: str) -> None:
        await tx.conn.execute(delete(vector_rows).where(vector_rows.c.agent_id == agent_id))
        for statement in fts_drop(agent_id):
            await tx.conn.exec_driver_sql(statement)

        async def forget() -> None:
            self.forget(agent_id)

        tx.on_commit(forget)

    def forget(self, agent_id: str) -> None:
        self._generations[agent_id] = self._generations.get(agent_id, 0) + 1
        self._texts.discard(agent_id)
        self._term_counts.pop(agent_id, None)
        self._parts.pop(agent_id, None)
        self._used.pop((agent_id, TEXT), None)
        for kind in KINDS:
            self._matrices.pop((agent_id, kind), None)
            self._used.pop((agent_id, kind), None)
            self._locks.pop((agent_id, kind), None)

    def on_event(self, topic: str, event: Event) -> None:
        if topic != CONTROL:
            return
        if event.get("type") == "agent_deleted":
            self.forget(event["agentId"])
        elif event.get("type") == "vectors_changed" and event.get("node") != self._node:
            self._drop_matrix(event["agentId"], event["kind"])
        elif event.get("type") == "events_missed":
            # A change announced meanwhile may have been missed: every matrix is read again.
            for agent_id, kind in list(self._matrices):
                self._drop_matrix(agent_id, kind)

    def _drop_matrix(self, agent_id: str, kind: Kind) -> None:
        self._generations[agent_id] = self._generations.get(agent_id, 0) + 1
        self._matrices.pop((agent_id, kind), None)
        self._used.pop((agent_id, kind), None)

    def cached_bytes(self) -> int:
        matrices = sum(matrix.nbytes for matrix in self._matrices.values())
        return matrices + sum(parts.nbytes for parts in list(self._parts.values()))

    def _evict(self, keep: tuple[str, str]) -> None:
        """Mark `keep` as just searched, then drop idle matrices and text parts and, least
        recently searched first, those beyond the memory bound (never `keep`: a search needs
        it). Dropping is safe at any time: writes reach only cached matrices, text parts are
        checked against the table on every search, and the database has them all."""
        now = self._clock()
        self._used.pop(keep, None)
        self._used[keep] = now
        total = self.cached_bytes()
        for key, used in list(self._used.items()):
            if key == keep:
                continue
            if total <= self._cache_bytes and now - used < self._idle_seconds:
                continue
            dropped: TextParts | VectorMatrix | None
            if key[1] == TEXT:
                dropped = self._parts.pop(key[0], None)
            else:
                dropped = self._matrices.pop(cast("tuple[str, Kind]", key), None)
            del self._used[key]
            if dropped is not None:
                total -= dropped.nbytes

    async def text_search(
        self, agent_id: str, query: str, limit: int, *, visibility: str | None = None
    ) -> list[Hit]:
        """One read hop: the table check (until it is known), the terms worth scoring and the
        search run together on one connection. A search of all the agent's chunks adds up the
        kept BM25 parts of its terms (see `impacts`); one limited to a visibility asks FTS5,
        which filters each match before the limit."""
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        table = fts_table(agent_id)
        known = agent_id in self._texts
        shared = text(_SHARED_TEXT_SEARCH.format(table=table))
        params = {"agent_id": agent_id, "limit": limit, "visibility": visibility}

        def search(conn: Connection) -> list[Hit] | None:
            if not known and conn.execute(_FTS_EXISTS, {"name": table}).first() is None:
                return None
            chosen = _informative(conn, table, agent_id, terms, self._term_counts)
            if not chosen:
                return []
            if visibility is None:
                return self._ranked(conn, agent_id, table, chosen, limit)
            rows = conn.execute(shared, {**params, "query": " OR ".join(chosen)})
            return [Hit(row.id, -float(row.rank)) for row in rows]

        hits = await self._db.read_unit(search)
        if hits is None:
            return []
        self._texts.add(agent_id)
        if visibility is None:
            self._evict(keep=(agent_id, TEXT))
            self._finish_parts(agent_id, table)
        return hits

    def _finish_parts(self, agent_id: str, table: str) -> None:
        """Ask FTS5, in the background, for the whole parts of the words a search scored only
        in part, so that the next searches find them kept (one agent at a time)."""
        parts = self._parts.get(agent_id)
        if parts is None or not parts.unfinished or agent_id in self._finishing:
            return  # a task finishing this agent's parts looks again before it ends
        self._finishing.add(agent_id)

        async def finish() -> None:
            try:
                while (current := self._parts.get(agent_id)) is not None and current.unfinished:
                    await self._db.read_unit(partial(current.finish, table=table))
            except Exception:  # the table dropped by another node, the database closing
                log.warning("text parts of agent %s left unfinished", agent_id, exc_info=True)
            finally:
                self._finishing.discard(agent_id)

        task = asyncio.create_task(finish())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _ranked(
        self, conn: Connection, agent_id: str, table: str, terms: list[str], limit: int
    ) -> list[Hit]:
        """The best `limit` chunks for the OR of `terms`, from the agent's kept parts, kept
        afresh when the table changed since they were asked."""
        from palaver.knowledge.index import impacts
        from palaver.knowledge.index.impacts import TextParts, Word, structure_stamp

        stamp = structure_stamp(conn, table)
        parts = self._parts.get(agent_id)
        if parts is None or parts.stamp != stamp:
            parts = self._parts[agent_id] = TextParts(stamp, self._cache_bytes // TEXT_SHARE)
        counts = self._term_counts.get(agent_id)
        words = []
        for term in terms:
            stem = index_term(term)
            rows = counts.docs.get(stem, 0) if counts and stem is not None else 0
            words.append(Word(term, stem or "", rows))
        ranked = impacts.ranked(conn, table, parts, words, limit)
        if not ranked:
            return []
        seqs = {f"s{i}": seq for i, (seq, _) in enumerate(ranked)}
        found = conn.execute(
            text(_CHUNK_IDS.format(seqs=", ".join(f":{name}" for name in seqs))),
            {"agent_id": agent_id, **seqs},
        )
        ids = {int(seq): chunk_id for seq, chunk_id in found}
        return [Hit(ids[seq], score) for seq, score in ranked if seq in ids]

    async def _has_text(
        self, conn: AsyncConnection, agent_id: str, *, remember: bool = True
    ) -> bool:
        """Whether the agent has its text table (made with its first document). Seen from a
        read connection, hence committed, it is remembered until the agent is forgotten."""
        if agent_id in self._texts:
            return True
        found = await conn.execute(_FTS_EXISTS, {"name": fts_table(agent_id)})
        if found.first() is None:
            return False
        if remember:
            self._texts.add(agent_id)
        return True

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
        """With `tx` and other nodes on the file, the matrix is read afresh in the transaction,
        which holds the file's write lock: another node's announcement may still be on its way.
        On one node the cached matrix already holds every committed write."""
        import numpy as np

        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != space.dim:
            raise ValueError(f"query vector has {query.shape[0]} dimensions, not {space.dim}")
        if tx is not None and self._bus is not None:
            snapshot = (await tx.conn.run_sync(self._loader(agent_id, kind, space))).snapshot()
        else:
            matrix = await self._matrix(agent_id, kind, space)
            snapshot = matrix.snapshot()
            self._evict(keep=(agent_id, kind))
            if matrix.needs_scan():
                self._pack((agent_id, kind), matrix, snapshot)
        if snapshot.size * space.dim < self._thread_threshold:
            return snapshot.top(query, limit, channel_id, type)
        return await anyio.to_thread.run_sync(snapshot.top, query, limit, channel_id, type)

    def _pack(self, key: tuple[str, Kind], matrix: VectorMatrix, snapshot: Snapshot) -> None:
        """Make the matrix's packed int8 scan in a worker thread (0.2 s at 100,000 rows), at
        most once per `PACK_INTERVAL_SECONDS`; searches stay float32 until it is attached, and
        it is dropped with the matrix."""
        now = time.monotonic()
        if key in self._packing or now - matrix.packed_at < PACK_INTERVAL_SECONDS:
            return
        self._packing.add(key)
        matrix.packed_at = now

        async def pack() -> None:
            from palaver.knowledge.index.int8_scan import PackedScan

            try:
                scan = await anyio.to_thread.run_sync(PackedScan, snapshot.matrix, snapshot.version)
            except Exception:
                log.warning("no int8 scan for a matrix of %d rows", snapshot.size, exc_info=True)
                matrix.unpackable = True
            else:
                matrix.attach(scan)
            finally:
                self._packing.discard(key)

        task = asyncio.create_task(pack())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def packed(self) -> None:
        """Wait for the int8 scans being made and the text parts being finished (for
        benchmarks and tests)."""
        await asyncio.gather(*self._tasks)

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

    def _after_commit(self, tx: Tx, agent_id: str, kind: Kind, change: MatrixChange) -> None:
        async def apply() -> None:
            key = (agent_id, kind)
            if key in self._loading:
                self._loading[key].append(change)
            elif key in self._matrices:
                change(self._matrices[key])
            if self._bus is not None:
                announcement = {"type": "vectors_changed", "agentId": agent_id, "kind": kind}
                await self._bus.publish(CONTROL, {**announcement, "node": self._node})

        tx.on_commit(apply)

    async def _matrix(self, agent_id: str, kind: Kind, space: Space) -> VectorMatrix:
        key = (agent_id, kind)
        matrix = self._matrices.get(key)
        if matrix is not None and matrix.space == space:
            return matrix
        async with self._locks.setdefault(key, asyncio.Lock()):
            matrix = self._matrices.get(key)
            if matrix is not None and matrix.space == space:
                return matrix
            generation = self._generations.get(agent_id, 0)
            self._loading[key] = []
            try:
                matrix = await self._load(agent_id, kind, space)
            finally:
                changes = self._loading.pop(key)
            for change in changes:
                change(matrix)
            if self._generations.get(agent_id, 0) == generation:
                self._matrices[key] = matrix
            return matrix

    async def _load(self, agent_id: str, kind: Kind, space: Space) -> VectorMatrix:
        return await self._db.read_unit(self._loader(agent_id, kind, space))

    def _loader(
        self, agent_id: str, kind: Kind, space: Space
    ) -> Callable[[Connection], VectorMatrix]:
        query = (
            select(
                vector_rows.c.item_id,
                vector_rows.c.channel_id,
                vector_rows.c.type,
                vector_rows.c.data,
            )
            .where(
                vector_rows.c.agent_id == agent_id,
                vector_rows.c.kind == kind,
                vector_rows.c.embedder == space.embedder,
                vector_rows.c.dim == space.dim,
            )
            .order_by(vector_rows.c.item_id)
        )
        counted = select(func.count()).select_from(query.order_by(None).subquery())

        def load(conn: Connection) -> VectorMatrix:
            import numpy as np

            from palaver.knowledge.index.matrix import VectorMatrix

            matrix = VectorMatrix.sized(space, conn.execute(counted).scalar_one())
            rows = conn.execute(query.execution_options(yield_per=_LOAD_BATCH))
            for part in rows.partitions():
                block = np.frombuffer(b"".join(row.data for row in part), dtype=np.float32)
                matrix.extend(
                    [Entry(row.item_id, row.channel_id, row.type) for row in part],
                    block.reshape(len(part), space.dim),
                )
            return matrix

        return load


def _stale(space: Space) -> ColumnElement[bool]:
    return not_(and_(vector_rows.c.embedder == space.embedder, vector_rows.c.dim == space.dim))


@dataclass
class _TermCounts:
    """Document counts of an agent's terms, as its vocabulary table gave them when the agent
    had `chunks` chunks. Counting a term walks its whole posting list (40 ms for a common
    term at 100,000 chunks), and the counts only decide which terms are too common to score,
    so they are kept until the agent's chunk count moves by a tenth."""

    chunks: int
    docs: dict[str, int] = field(default_factory=dict)

    def fresh(self, chunks: int) -> bool:
        return abs(chunks - self.chunks) <= self.chunks // 10


def _informative(
    conn: Connection,
    table: str,
    agent_id: str,
    terms: list[str],
    cache: dict[str, _TermCounts],
) -> list[str]:
    """The terms found in fewer than half of the agent's chunks. FTS5's BM25 floors the IDF of
    any other term at 1e-6, so it cannot change the ranking, yet every chunk holding it would
    be scored: at 100,000 chunks one such term took a query from 40 to 300 ms. When every term
    is that common, the rarest is kept, unless it is in `UNHELPFUL_ROWS` rows or more (a lone
    term too, in an agent that large). Words are counted as the terms FTS5 makes of them
    (`fts_terms`); a word it cuts in several counts as rare, which costs time, never results
    (see `worth_scoring`)."""
    chunks = (conn.execute(_AGENT_CHUNKS, {"agent": agent_id})).scalar_one()
    if len(terms) < 2 and chunks < UNHELPFUL_ROWS:
        return terms
    counts = cache.get(agent_id)
    if counts is None or not counts.fresh(chunks):
        counts = cache[agent_id] = _TermCounts(chunks)
    stems = {t: index_term(t) for t in terms}
    unknown = sorted({s for s in stems.values() if s is not None and s not in counts.docs})
    if unknown:
        found = conn.execute(
            text(_TERM_DOCS.format(table=table, terms=_placeholders("t", unknown))),
            _numbered("t", unknown),
        )
        counts.docs.update(dict.fromkeys(unknown, 0))
        counts.docs.update({term: int(count) for term, count in found})
    return worth_scoring({t: counts.docs.get(stems[t] or "", 0) for t in terms}, chunks)


def _placeholders(prefix: str, values: Sequence[str]) -> str:
    return ", ".join(f":{prefix}{i}" for i in range(len(values)))


def _numbered(prefix: str, values: Sequence[str]) -> dict[str, str]:
    return {f"{prefix}{i}": value for i, value in enumerate(values)}
