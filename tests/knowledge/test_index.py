"""The SearchIndex contract, run over both adapters (SQLite and PostgreSQL): BM25-ranked text
search, exact cosine, writes seen once committed, memory and visibility filters, stale vectors,
agent removal, and one agent's searches never touching another's rows. Tests of the SQLite
adapter's own machinery (its cached matrices, FTS5 tables) run on SQLite alone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from sqlalchemy import delete, func, select, text

from palaver.knowledge import documents as repo
from palaver.knowledge.chunk import Chunk
from palaver.knowledge.documents import Document
from palaver.knowledge.index import sqlite as sqlite_index
from palaver.knowledge.index.base import Entry, IndexStatus, Kind, SearchIndex, Space
from palaver.knowledge.index.fts_terms import fts_terms
from palaver.knowledge.index.matrix import VectorMatrix
from palaver.knowledge.index.postgres import PostgresSearchIndex, nearest_sql
from palaver.knowledge.index.sqlite import SqliteSearchIndex, query_terms, worth_scoring
from palaver.store import migrate
from palaver.store.db import Database
from palaver.store.tables.base import utcnow
from palaver.store.tables.core import agents
from palaver.store.tables.knowledge import fts_table, vectors
from tests.knowledge.helpers import AGENT, OTHER_AGENT, add_agent, open_copy
from tests.pg_server import PgServer

SPACE = Space("test/random", 8)
OTHER_SPACE = Space("test/other", 8)
SQLITE_ONLY = pytest.mark.parametrize("db", ["sqlite"], indirect=True)
"""For tests of the SQLite adapter's own machinery."""


@pytest.fixture(scope="module")
def pg_template(request: pytest.FixtureRequest) -> str:
    """A migrated PostgreSQL database that each test copies: the schema as a real deployment
    has it, migration 0009's search columns and indexes included."""
    pg: PgServer = request.getfixturevalue("pg")
    url = pg.new_database("index_template")
    migrate.upgrade(url)
    return urlsplit(url).path.lstrip("/")


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(
    request: pytest.FixtureRequest, template_db: Path, tmp_path: Path
) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        database = await open_copy(template_db, tmp_path, AGENT, OTHER_AGENT)
    else:
        pg: PgServer = request.getfixturevalue("pg")
        database = Database(pg.new_database(template=request.getfixturevalue("pg_template")))
        for agent_id in (AGENT, OTHER_AGENT):
            await add_agent(database, agent_id)
    yield database
    await database.dispose()


@pytest.fixture
def index(db: Database) -> SearchIndex:
    return SqliteSearchIndex(db) if db.is_sqlite else PostgresSearchIndex(db)


def unit(seed: int, dim: int = 8) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def stack(*seeds: int) -> np.ndarray:
    return np.stack([unit(s) for s in seeds])


async def put(
    db: Database, index: SearchIndex, agent: str, entries: list[Entry], space: Space = SPACE
) -> None:
    async with db.write() as tx:
        seeds = [int(e.id.rsplit("_", 1)[-1]) for e in entries]
        await index.put(tx, agent, "memory", entries, stack(*seeds), space)


async def add_document(
    db: Database,
    index: SearchIndex,
    agent: str,
    doc_id: str,
    texts: list[str],
    visibility: str = "owner",
) -> list[str]:
    document = Document(
        doc_id, agent, f"{doc_id}.md", "markdown", 1, None, len(texts), doc_id, utcnow(), visibility
    )
    ids = [f"chunk_{doc_id}_{i}" for i in range(len(texts))]
    parts = [(ids[i], Chunk(i, t, ("Guide", f"Part {i}"), None, 10)) for i, t in enumerate(texts)]
    async with db.write() as tx:
        await repo.insert_with_chunks(tx.conn, document, parts)
        await index.add_text(tx, agent, [doc_id])
    return ids


async def test_vector_search_is_exact_cosine_best_first(db: Database, index: SearchIndex) -> None:
    await put(db, index, AGENT, [Entry(f"mem_{i}") for i in range(1, 30)])
    query = unit(7)
    hits = await index.vector_search(AGENT, "memory", query, SPACE, 5)
    expected = sorted(range(1, 30), key=lambda i: -float(unit(i) @ query))[:5]
    assert [h.id for h in hits] == [f"mem_{i}" for i in expected]
    assert hits[0].id == "mem_7" and hits[0].score == pytest.approx(1.0, abs=1e-6)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_searches_never_cross_agents(db: Database, index: SearchIndex) -> None:
    await put(db, index, AGENT, [Entry("mem_1")])
    await put(db, index, OTHER_AGENT, [Entry("mem_2")])
    await add_document(db, index, AGENT, "doc_a", ["zebras graze on the savanna"])
    await add_document(db, index, OTHER_AGENT, "doc_b", ["zebras sleep standing up"])
    assert [h.id for h in await index.vector_search(AGENT, "memory", unit(2), SPACE, 5)] == [
        "mem_1"
    ]
    assert [h.id for h in await index.text_search(AGENT, "zebras", 5)] == ["chunk_doc_a_0"]


async def test_the_matrix_changes_only_when_the_write_commits(
    db: Database, index: SearchIndex
) -> None:
    await put(db, index, AGENT, [Entry("mem_1")])
    assert len(await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)) == 1
    async with db.write() as tx:
        await index.put(tx, AGENT, "memory", [Entry("mem_2")], stack(2), SPACE)
        inside = await index.vector_search(AGENT, "memory", unit(2), SPACE, 5)
        assert [h.id for h in inside] == ["mem_1"]
    after = await index.vector_search(AGENT, "memory", unit(2), SPACE, 5)
    assert [h.id for h in after] == ["mem_2", "mem_1"]

    with pytest.raises(RuntimeError):
        async with db.write() as tx:
            await index.put(tx, AGENT, "memory", [Entry("mem_3")], stack(3), SPACE)
            raise RuntimeError("roll back")
    assert "mem_3" not in [
        h.id for h in await index.vector_search(AGENT, "memory", unit(3), SPACE, 5)
    ]
    assert "mem_3" not in [
        h.id for h in await index.vector_search(AGENT, "memory", unit(3), SPACE, 5)
    ]


class SlowLoadIndex(SqliteSearchIndex):
    """Holds a matrix load after its read, so that a write can commit in between."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.read_done = asyncio.Event()
        self.release = asyncio.Event()

    async def _load(self, agent_id: str, kind: Kind, space: Space) -> VectorMatrix:
        matrix = await super()._load(agent_id, kind, space)
        self.read_done.set()
        await self.release.wait()
        return matrix


@SQLITE_ONLY
async def test_a_write_committed_during_a_load_is_not_lost(db: Database) -> None:
    index = SlowLoadIndex(db)
    await put(db, index, AGENT, [Entry("mem_1")])
    search = asyncio.create_task(index.vector_search(AGENT, "memory", unit(2), SPACE, 5))
    await index.read_done.wait()
    await put(db, index, AGENT, [Entry("mem_2")])
    index.release.set()
    assert [h.id for h in await search] == ["mem_2", "mem_1"]
    assert len(await index.vector_search(AGENT, "memory", unit(2), SPACE, 5)) == 2


async def test_memory_filters_by_channel_and_type(db: Database, index: SearchIndex) -> None:
    await put(
        db,
        index,
        AGENT,
        [
            Entry("mem_1", "ch_dm", "semantic"),
            Entry("mem_2", "ch_guests", "episodic"),
            Entry("mem_3", "ch_guests", "semantic"),
        ],
    )
    in_room = await index.vector_search(AGENT, "memory", unit(1), SPACE, 5, channel_id="ch_guests")
    assert sorted(h.id for h in in_room) == ["mem_2", "mem_3"]
    typed = await index.vector_search(AGENT, "memory", unit(1), SPACE, 5, type="semantic")
    assert sorted(h.id for h in typed) == ["mem_1", "mem_3"]
    both = await index.vector_search(
        AGENT, "memory", unit(1), SPACE, 5, channel_id="ch_guests", type="episodic"
    )
    assert [h.id for h in both] == ["mem_2"]
    assert await index.vector_search(AGENT, "memory", unit(1), SPACE, 5, channel_id="ch_x") == []


async def test_replacing_a_vector_moves_its_filters(db: Database, index: SearchIndex) -> None:
    await put(db, index, AGENT, [Entry("mem_1", "ch_a", "semantic")])
    await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)
    await put(db, index, AGENT, [Entry("mem_1", "ch_b", "semantic")])
    assert await index.vector_search(AGENT, "memory", unit(1), SPACE, 5, channel_id="ch_a") == []
    moved = await index.vector_search(AGENT, "memory", unit(1), SPACE, 5, channel_id="ch_b")
    assert [h.id for h in moved] == ["mem_1"]


async def test_text_search_ranks_by_bm25_and_reads_headings(
    db: Database, index: SearchIndex
) -> None:
    await add_document(
        db,
        index,
        AGENT,
        "doc_a",
        [
            "The kettle boils water for tea.",
            "Tea leaves steep for three minutes; steeping tea longer makes bitter tea.",
            "Coffee needs hotter water than green tea.",
        ],
    )
    hits = await index.text_search(AGENT, "how long should tea steep?", 10)
    assert hits[0].id == "chunk_doc_a_1"
    assert "chunk_doc_a_0" not in {h.id for h in hits}, "'tea' is in every chunk: no weight"
    assert all(h.score > 0 for h in hits)
    by_heading = await index.text_search(AGENT, "part 2", 10)
    assert by_heading[0].id == "chunk_doc_a_2"


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "NEAR(a b)", "tea AND OR NOT", "col:tea", "te*", "()", "-tea", "^tea", "'"],
)
async def test_user_text_is_never_fts_syntax(db: Database, index: SearchIndex, query: str) -> None:
    await add_document(db, index, AGENT, "doc_a", ["tea and biscuits"])
    await index.text_search(AGENT, query, 5)


def test_query_terms_are_quoted_words_without_stop_words() -> None:
    assert query_terms("What is the capital of France?") == ['"capital"', '"france"']
    assert query_terms("the THE the") == ['"the"']
    assert query_terms("?!") == []


async def test_deleting_vectors_and_chunks(db: Database, index: SearchIndex) -> None:
    await put(db, index, AGENT, [Entry("mem_1"), Entry("mem_2")])
    await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)
    async with db.write() as tx:
        await index.delete(tx, AGENT, "memory", ["mem_1"])
    assert [h.id for h in await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)] == [
        "mem_2"
    ]
    await add_document(db, index, AGENT, "doc_a", ["walruses are large"])
    async with db.write() as tx:
        await index.delete(tx, AGENT, "chunk", ["chunk_doc_a_0"])
        await repo.delete_document(tx.conn, "doc_a")
    assert await index.text_search(AGENT, "walruses", 5) == []


async def test_text_search_answers_another_nodes_writes_though_this_node_keeps_word_parts(
    db: Database, index: SearchIndex
) -> None:
    """Both adapters keep each word's ranking part in the process; a second index on the same
    database (another node) adds and removes chunks, and the first one's next search, with its
    parts kept, answers from the database as it now is."""
    other_node = SqliteSearchIndex(db) if db.is_sqlite else PostgresSearchIndex(db)
    filler = [f"filler chunk {n} about nothing" for n in range(6)]
    await add_document(db, index, AGENT, "doc_a", ["otters hold hands", *filler])
    assert [h.id for h in await index.text_search(AGENT, "otters", 5)] == ["chunk_doc_a_0"]
    added = await add_document(db, other_node, AGENT, "doc_b", ["otters otters otters swim"])
    assert [h.id for h in await index.text_search(AGENT, "otters", 5)] == [
        added[0],
        "chunk_doc_a_0",
    ]
    async with db.write() as tx:
        await other_node.delete(tx, AGENT, "chunk", added)
        await repo.delete_document(tx.conn, "doc_b")
    assert [h.id for h in await index.text_search(AGENT, "otters", 5)] == ["chunk_doc_a_0"]
    if db.is_sqlite:
        return  # an agent's dropped FTS5 table is told to other nodes on the bus (test_cluster)
    async with db.write() as tx:
        await other_node.drop_agent(tx, AGENT)
    assert await index.text_search(AGENT, "otters", 5) == []


async def test_stale_vectors_are_reported_and_left_out(db: Database, index: SearchIndex) -> None:
    await put(db, index, AGENT, [Entry("mem_1"), Entry("mem_2")], space=OTHER_SPACE)
    await put(db, index, AGENT, [Entry("mem_3")])
    status = await index.status(AGENT, SPACE)
    assert status == {"chunk": IndexStatus(0, 0), "memory": IndexStatus(total=3, stale=2)}
    assert await index.stale_ids(AGENT, "memory", SPACE) == ["mem_1", "mem_2"]
    hits = await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)
    assert [h.id for h in hits] == ["mem_3"]
    await put(db, index, AGENT, [Entry("mem_1")])
    assert await index.stale_ids(AGENT, "memory", SPACE) == ["mem_2"]
    hits = await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)
    assert [h.id for h in hits] == ["mem_1", "mem_3"]


async def test_dropping_an_agent_removes_its_rows_and_matrices(
    db: Database, index: SearchIndex
) -> None:
    await put(db, index, AGENT, [Entry("mem_1")])
    await add_document(db, index, AGENT, "doc_a", ["narwhals have tusks"])
    await index.vector_search(AGENT, "memory", unit(1), SPACE, 5)
    async with db.write() as tx:
        await index.drop_agent(tx, AGENT)
        await tx.conn.execute(delete(agents).where(agents.c.id == AGENT))
    assert await index.vector_search(AGENT, "memory", unit(1), SPACE, 5) == []
    assert await index.text_search(AGENT, "narwhals", 5) == []
    async with db.read() as conn:
        assert (await conn.execute(select(func.count()).select_from(vectors))).scalar() == 0
        if not db.is_sqlite:
            return
        leftover = await conn.execute(
            text("SELECT name FROM sqlite_master WHERE name LIKE :table"),
            {"table": f"{fts_table(AGENT)}%"},
        )
        assert leftover.all() == []


@SQLITE_ONLY
async def test_large_matrices_are_scanned_in_a_worker_thread_with_the_same_answer(
    db: Database,
) -> None:
    inline, threaded = SqliteSearchIndex(db), SqliteSearchIndex(db, thread_threshold=0)
    await put(db, inline, AGENT, [Entry(f"mem_{i}") for i in range(1, 50)])
    for index in (inline, threaded):
        hits = await index.vector_search(AGENT, "memory", unit(11), SPACE, 3)
        assert hits[0].id == "mem_11"
    first = await inline.vector_search(AGENT, "memory", unit(5), SPACE, 10)
    assert first == await threaded.vector_search(AGENT, "memory", unit(5), SPACE, 10)


def test_a_snapshot_survives_later_changes_to_its_matrix() -> None:
    matrix = VectorMatrix(SPACE, capacity=2)
    matrix.upsert([Entry("a"), Entry("b")], stack(1, 2))
    before = matrix.snapshot()
    matrix.upsert([Entry("c"), Entry("a")], stack(3, 4))
    matrix.remove(["b"])
    assert list(before.ids[: before.size]) == ["a", "b"]
    assert np.allclose(before.matrix, stack(1, 2))
    now = matrix.snapshot()
    assert list(now.ids) == ["a", "c"] and np.allclose(now.matrix, stack(4, 3))
    assert [h.id for h in now.top(unit(3), 1)] == ["c"]


async def test_terms_in_half_the_chunks_or_more_are_left_out_of_scoring(
    db: Database, index: SearchIndex
) -> None:
    await add_document(
        db,
        index,
        AGENT,
        "doc_a",
        ["common words everywhere", "common words and a rare heron", "common fox", "common owl"],
    )
    hits = await index.text_search(AGENT, "common heron", 10)
    assert [h.id for h in hits] == ["chunk_doc_a_1"], "'common' alone matches nothing useful"
    only_common = await index.text_search(AGENT, "common", 10)
    assert len(only_common) == 4, "when every term is common, the rarest one still searches"


async def test_words_in_half_of_a_large_agents_chunks_are_not_searched_by_text_at_all(
    db: Database, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `UNHELPFUL_ROWS` rows (2 here), a query whose every word is that common gets
    nothing from text search, on either adapter and with either visibility, and no error."""
    monkeypatch.setattr(sqlite_index, "UNHELPFUL_ROWS", 2)
    await add_document(
        db,
        index,
        AGENT,
        "doc_a",
        ["common words everywhere", "common words and a rare heron", "common fox", "common owl"],
    )
    assert await index.text_search(AGENT, "common words", 10) == []
    assert await index.text_search(AGENT, "common words", 10, visibility="members") == []
    assert [h.id for h in await index.text_search(AGENT, "common heron", 10)] == ["chunk_doc_a_1"]


async def test_text_search_filters_visibility_before_its_limit(
    db: Database, index: SearchIndex
) -> None:
    """Were the filter applied after the top 20, 25 private matches would crowd out the one
    shared document, and a guest channel would get nothing."""
    for n in range(25):
        await add_document(
            db, index, AGENT, f"doc_private{n}", [f"zebra crossing notes number {n}"]
        )
    (shared,) = await add_document(
        db, index, AGENT, "doc_shared", ["a zebra seen at the zoo"], visibility="members"
    )
    everything = await index.text_search(AGENT, "zebra", 20)
    assert len(everything) == 20
    members = await index.text_search(AGENT, "zebra", 20, visibility="members")
    assert [hit.id for hit in members] == [shared]


async def test_vector_search_by_visibility_follows_a_relabel_of_the_loaded_matrix(
    db: Database, index: SearchIndex
) -> None:
    ids = [f"chunk_v_{n}" for n in range(1, 6)]
    async with db.write() as tx:
        await index.put(
            tx, AGENT, "chunk", [Entry(i, type="owner") for i in ids], stack(1, 2, 3, 4, 5), SPACE
        )
    query = unit(3)
    assert await index.vector_search(AGENT, "chunk", query, SPACE, 5, type="members") == []
    assert len(await index.vector_search(AGENT, "chunk", query, SPACE, 5)) == 5, "loaded"
    async with db.write() as tx:
        await index.relabel(tx, AGENT, "chunk", [ids[2]], "members")
    shared = await index.vector_search(AGENT, "chunk", query, SPACE, 5, type="members")
    assert [hit.id for hit in shared] == [ids[2]]
    async with db.write() as tx:
        await index.relabel(tx, AGENT, "chunk", [ids[2]], "owner")
    assert await index.vector_search(AGENT, "chunk", query, SPACE, 5, type="members") == []


async def test_one_agents_query_never_returns_or_scores_another_agents_chunks(
    db: Database, index: SearchIndex
) -> None:
    """The other agent's many matching chunks change neither the results nor the BM25 scores
    (its document frequencies are not this agent's), and its rows are not in this agent's
    text table to be walked."""
    await add_document(
        db, index, AGENT, "doc_a", ["otters hold hands", "rivers and stones", "moss", "ferns"]
    )
    before = await index.text_search(AGENT, "otters stones", 10)
    texts = [f"otters and stones number {n}" for n in range(30)]
    await add_document(db, index, OTHER_AGENT, "doc_b", texts)
    after = await index.text_search(AGENT, "otters stones", 10)
    assert after == before
    assert {h.id for h in after} == {"chunk_doc_a_0", "chunk_doc_a_1"}
    if not db.is_sqlite:
        return
    async with db.read() as conn:
        table = fts_table(AGENT)
        rows = await conn.execute(text(f"SELECT count(*) FROM {table}_docsize"))
        assert rows.scalar() == 4


@SQLITE_ONLY
async def test_evicted_matrices_reload_with_the_same_answers(db: Database) -> None:
    """A bound that holds one agent's matrix: searching the other evicts it, and its next
    search reloads it from the database, writes made meanwhile included."""
    now = [0.0]
    index = SqliteSearchIndex(db, cache_bytes=1, clock=lambda: now[0])
    await put(db, index, AGENT, [Entry(f"mem_{i}") for i in range(1, 40)])
    await put(db, index, OTHER_AGENT, [Entry(f"mem_{i}") for i in range(40, 60)])
    first = await index.vector_search(AGENT, "memory", unit(7), SPACE, 10)
    one = index.cached_bytes()
    await index.vector_search(OTHER_AGENT, "memory", unit(41), SPACE, 5)
    assert index.cached_bytes() < one + 1000, "the first agent's matrix was dropped"
    assert await index.vector_search(AGENT, "memory", unit(7), SPACE, 10) == first
    await index.vector_search(OTHER_AGENT, "memory", unit(41), SPACE, 5)
    await put(db, index, AGENT, [Entry("mem_60")])
    again = await index.vector_search(AGENT, "memory", unit(60), SPACE, 1)
    assert [h.id for h in again] == ["mem_60"]


@SQLITE_ONLY
async def test_matrices_not_searched_for_a_while_are_evicted(db: Database) -> None:
    now = [0.0]
    index = SqliteSearchIndex(db, idle_seconds=60, clock=lambda: now[0])
    await put(db, index, AGENT, [Entry(f"mem_{i}") for i in range(1, 20)])
    await put(db, index, OTHER_AGENT, [Entry("mem_30")])
    first = await index.vector_search(AGENT, "memory", unit(3), SPACE, 5)
    await index.vector_search(OTHER_AGENT, "memory", unit(30), SPACE, 1)
    both = index.cached_bytes()
    now[0] = 30.0
    await index.vector_search(OTHER_AGENT, "memory", unit(30), SPACE, 1)
    assert index.cached_bytes() == both
    now[0] = 61.0
    await index.vector_search(OTHER_AGENT, "memory", unit(30), SPACE, 1)
    assert index.cached_bytes() < both
    assert await index.vector_search(AGENT, "memory", unit(3), SPACE, 5) == first


@pytest.mark.parametrize("db", ["postgresql"], indirect=True)
async def test_an_agent_with_many_vectors_is_searched_through_hnsw_with_the_exact_answer(
    db: Database,
) -> None:
    """Above the threshold the query takes the HNSW index of its dimension, which holds every
    agent's vectors; the other agent's nearer ones never show, and too few of this agent's
    among the candidates sends the search back to the exact scan."""
    space = Space("test/random", 384)
    exact, hnsw = PostgresSearchIndex(db), PostgresSearchIndex(db, exact_below=1)
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((60, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    async with db.write() as tx:
        await exact.put(tx, AGENT, "chunk", [Entry(f"c_{i}") for i in range(30)], rows[:30], space)
        others = [Entry(f"o_{i}") for i in range(30)]
        await exact.put(tx, OTHER_AGENT, "chunk", others, rows[:30], space)
    async with db.read() as conn:
        params = {"agent": AGENT, "kind": "chunk", "embedder": space.embedder, "dim": 384}
        params |= {"channel": None, "type": None, "limit": 10, "query": _vector_text(rows[0])}
        plan = await conn.execute(text("EXPLAIN " + nearest_sql(384)), params)
        assert "ix_vectors_hnsw_384" in str(plan.all())
    scans = await _index_scans(db, "ix_vectors_hnsw_384")
    for seed in range(10):
        query = rows[seed] + 0.1 * rng.standard_normal(384).astype(np.float32)
        query /= np.linalg.norm(query)
        wanted = await exact.vector_search(AGENT, "chunk", query, space, 10)
        found = await hnsw.vector_search(AGENT, "chunk", query, space, 10)
        assert [h.id for h in found] == [h.id for h in wanted]
        assert all(h.id.startswith("c_") for h in found)
        assert [h.score for h in found] == pytest.approx([h.score for h in wanted], abs=1e-5)
    # Past the fifth run of a prepared statement a generic plan could leave the index: every
    # search must still have scanned it (PostgreSQL reports index scans within ~10 s).
    deadline = time.monotonic() + 20
    while await _index_scans(db, "ix_vectors_hnsw_384") < scans + 10:
        assert time.monotonic() < deadline, "the HNSW index was not used by every search"
        await asyncio.sleep(0.5)
    assert len(await hnsw.vector_search(AGENT, "chunk", rows[0], space, 30)) == 30


async def _index_scans(db: Database, index: str) -> int:
    async with db.read() as conn:
        query = text("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = :index")
        return int((await conn.execute(query, {"index": index})).scalar_one())


def _vector_text(row: np.ndarray) -> str:
    return "[" + ",".join(map(str, row.tolist())) + "]"


def test_a_query_keeps_a_word_it_can_match_when_its_rare_words_match_nothing() -> None:
    """Two chunks: every word found sits in half of them, the cut for words too common to
    score; the query must still match by its rarest found word, not by none."""
    assert worth_scoring({'"often"': 0, '"chain"': 1, '"oiled"': 1}, 2) == ['"often"', '"chain"']
    assert worth_scoring({'"chain"': 3, '"oil"': 40, '"the"': 90}, 100) == ['"chain"', '"oil"']
    assert worth_scoring({'"the"': 90, '"a"': 95}, 100) == ['"the"']
    assert worth_scoring({'"zebra"': 0}, 100) == ['"zebra"']
    assert worth_scoring({'"the"': 60_000, '"a"': 95_000}, 100_000) == []
    assert worth_scoring({'"the"': 60_000}, 100_000) == []
    assert worth_scoring({'"the"': 15_000, '"a"': 19_000}, 25_000) == ['"the"']


def test_query_words_become_the_terms_fts5_itself_makes_of_them() -> None:
    """The snowball Porter stemmer and Unicode folding differ from FTS5's tokenizer for such
    words; the terms are FTS5's own."""
    assert fts_terms("technology") == ("technolog",)
    assert fts_terms("Possibly") == ("possibl",)
    assert fts_terms("us") == ("us",)
    assert fts_terms("сценарий") == ("сценарий",)
    assert fts_terms("café") == ("cafe",)
    assert fts_terms("e_mail") == ("e", "mail")
    assert fts_terms("--") == ()
