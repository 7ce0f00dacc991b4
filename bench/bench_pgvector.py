"""Benchmark: the PostgreSQL search index (tsvector + GIN, pgvector HNSW) against the SQLite one
at 100,000 chunks, and the recall of HNSW against exact search (issue 14).

Both indexes hold the same synthetic corpus (`bench_knowledge.synthetic_documents`: Zipf
words, 150 a chunk), one agent of `--chunks` and `--others` agents of `--other-size` beside
it. The vectors are not uniform on the sphere, where nearest neighbours are barely nearer than
the rest and HNSW's recall looks worse than on any real data: they are a mixture of Gaussians
projected to the unit sphere, topics and subtopics within them, as sentence embeddings cluster
(`Mixture`). PostgreSQL is filled with COPY and its indexes built afterwards (the build timed);
SQLite as `bench_knowledge` fills it.

Each query is timed on each index's text path (top 20), vector path (top 20) and the hybrid
path (`KnowledgeBase.query`: both, fused, the chunks fetched); its vector is drawn from the
mixture, not embedded by the model (embedding costs the same on both indexes: see
`bench_knowledge`). PostgreSQL runs on core 0, this process (the SQLite index, the client) on
core 1; the two indexes alternate over the rounds.

    python -m bench.bench_pgvector            # 100,000 chunks, 200 queries (about 10 minutes)
    python -m bench.bench_pgvector --quick    # 12,000 chunks, to check the harness

Writes bench/results/pgvector.json and .md (`--quick`: pgvector_quick.*).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
from tests.pg_server import PgServer

from bench.bench_hot_paths import LOAD_CORE, SERVER_CORE, _machine, write_results
from bench.bench_knowledge import (
    SEED,
    add_agent,
    create_schema,
    fill_direct,
    query_texts,
    synthetic_documents,
)
from palaver.knowledge.index.base import SearchIndex, Space
from palaver.knowledge.index.postgres import EF_SEARCH, TSV, PostgresSearchIndex, _literal
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.knowledge.service import KnowledgeBase
from palaver.store import migrate
from palaver.store.db import Database
from palaver.store.tables.base import utcnow

if TYPE_CHECKING:
    from numpy.typing import NDArray

AGENT = "agent_search"
SPACE = Space("bench/mixture", 384)
DEPTH = 20


@dataclass
class Plan:
    chunks: int
    others: int
    other_size: int
    queries: int
    rounds: int


FULL = Plan(chunks=100_000, others=1, other_size=50_000, queries=200, rounds=2)
QUICK = Plan(chunks=12_000, others=1, other_size=3_000, queries=30, rounds=1)


class Mixture:
    """Unit vectors clustered as sentence embeddings are: `topics` random directions, each
    with `subtopics` offsets; a vector is its topic + 0.6 x a subtopic offset + 0.5 x noise
    (offsets and noise random unit vectors), normalised. Cosine to a vector of the same
    subtopic is about 0.8, of the same topic 0.6, of another topic about 0."""

    def __init__(self, dim: int, topics: int = 256, subtopics: int = 8, seed: int = SEED) -> None:
        rng = np.random.default_rng(seed)
        self.dim = dim
        self.topics = _unit(rng.standard_normal((topics, dim)))
        self.offsets = _unit(rng.standard_normal((topics, subtopics, dim)))

    def draw(self, rng: np.random.Generator, count: int) -> NDArray[np.float32]:
        topic = rng.integers(0, self.topics.shape[0], count)
        sub = rng.integers(0, self.offsets.shape[1], count)
        noise = _unit(rng.standard_normal((count, self.dim)))
        rows = self.topics[topic] + 0.6 * self.offsets[topic, sub] + 0.5 * noise
        return _unit(rows).astype(np.float32)


def _unit(rows: NDArray[Any]) -> NDArray[np.float64]:
    unit: NDArray[np.float64] = rows / np.linalg.norm(rows, axis=-1, keepdims=True)
    return unit


class Planted:
    """The embedder `KnowledgeBase.query` asks for a query's vector: the one drawn for it."""

    name = SPACE.embedder
    dim = SPACE.dim

    def __init__(self, vectors: dict[str, NDArray[np.float32]]) -> None:
        self._vectors = vectors

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.stack([self._vectors[t] for t in texts])

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        return self._vectors[text]


# -- filling ----------------------------------------------------------------------------------


def fill_postgres(url: str, agent: str, total: int, seed: int, mixture: Mixture) -> float:
    """The agent's synthetic chunks, as `fill_direct` writes them to SQLite, by COPY: documents,
    chunks with their `tsv` (through a staging table), vectors with their `embedding`."""
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        conn.execute(
            "CREATE TEMP TABLE staging (id text, document_id text, ordinal int, content text, "
            "context text) ON COMMIT DELETE ROWS"
        )
        for doc in synthetic_documents(total, seed, mixture.draw):
            count = len(doc.chunk_ids)
            conn.execute(
                "INSERT INTO documents (id, agent_id, name, kind, bytes, pages, chunks, "
                "content_hash, created_at, visibility) VALUES "
                "(%s, %s, %s, 'text', 0, NULL, %s, %s, %s, 'owner')",
                (doc.id, agent, f"synthetic-{doc.start}.txt", count, doc.id, utcnow()),
            )
            context = f"synthetic {doc.start}"
            with conn.cursor().copy("COPY staging FROM STDIN") as copy:
                for i in range(count):
                    copy.write_row((doc.chunk_ids[i], doc.id, i, doc.texts[i], context))
            conn.execute(
                "INSERT INTO chunks (id, agent_id, document_id, ordinal, heading_path, page, "
                f"tokens, content, context, tsv) SELECT id, %s, document_id, ordinal, '[]', "
                f"NULL, 0, content, context, {TSV} FROM staging",
                (agent,),
            )
            columns = "item_id, agent_id, kind, type, embedder, dim, data, embedding"
            with conn.cursor().copy(f"COPY vectors ({columns}) FROM STDIN") as copy:
                for chunk_id, row in zip(doc.chunk_ids, doc.vectors, strict=True):
                    copy.write_row(
                        (chunk_id, agent, "chunk", "owner", SPACE.embedder, SPACE.dim,
                         row.tobytes(), _literal(row))
                    )  # fmt: skip
            conn.commit()
    return time.perf_counter() - started


SEARCH_INDEXES = ("ix_chunks_tsv", f"ix_vectors_hnsw_{SPACE.dim}")


def drop_search_indexes(url: str) -> list[str]:
    """Drop the GIN and HNSW indexes migration 0009 made, answering their definitions: a bulk
    load builds them far faster afterwards than row by row."""
    with psycopg.connect(url, autocommit=True) as conn:
        definitions = []
        for name in SEARCH_INDEXES:
            found = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", (name,))
            definitions.append(str(found.fetchone()[0]))  # type: ignore[index]
            conn.execute(f"DROP INDEX {name}")
    return definitions


def build_search_indexes(url: str, definitions: list[str]) -> dict[str, float]:
    """Build the indexes again (seconds each), then VACUUM ANALYZE, as after any bulk load."""
    seconds: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        for name, definition in zip(SEARCH_INDEXES, definitions, strict=True):
            started = time.perf_counter()
            conn.execute(definition.encode())
            seconds[f"{name}_build_s"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE chunks")
        conn.execute("VACUUM ANALYZE vectors")
        conn.execute("VACUUM ANALYZE documents")
        seconds["vacuum_analyze_s"] = round(time.perf_counter() - started, 1)
    return seconds


# -- measuring --------------------------------------------------------------------------------


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 2),
    }


async def timed(call: Callable[[Any], Awaitable[Any]], inputs: Iterable[Any]) -> list[float]:
    samples = []
    for given in inputs:
        began = time.perf_counter()
        await call(given)
        samples.append(time.perf_counter() - began)
    return samples


async def paths(
    index: SearchIndex,
    kb: KnowledgeBase,
    texts: list[str],
    vectors: NDArray[np.float32],
    slow: int,
) -> dict[str, list[float]]:
    """One pass of every query over the index's text path, and of the first `slow` over its
    vector and hybrid paths."""

    async def text(query: str) -> None:
        await index.text_search(AGENT, query, DEPTH)

    async def vector(query: NDArray[np.float32]) -> None:
        await index.vector_search(AGENT, "chunk", query, SPACE, DEPTH)

    async def hybrid(query: str) -> None:
        await kb.query(AGENT, query, top_k=5)

    return {
        "text": await timed(text, texts),
        "vector": await timed(vector, vectors[:slow]),
        "hybrid": await timed(hybrid, texts[:slow]),
    }


_DIRECT = (
    "SELECT item_id FROM vectors WHERE agent_id = %(agent)s AND kind = 'chunk' "
    "AND embedder = %(embedder)s AND dim = {dim} ORDER BY {distance} LIMIT %(limit)s"
)
HNSW_STATEMENT = _DIRECT.format(
    dim=SPACE.dim,
    distance=f"embedding::vector({SPACE.dim}) <=> CAST(%(query)s AS vector({SPACE.dim}))",
)
"""The adapter's HNSW statement, sent outside it: ordered by the distance alone (no `item_id`
tie-break, which would keep the planner off the index), the dimension written out (the partial
index's predicate), planned for its parameters (psycopg's unnamed statements; the adapter
forces custom plans)."""
EXACT_STATEMENT = _DIRECT.format(dim=SPACE.dim, distance="embedding <=> CAST(%(query)s AS vector)")
"""Exact cosine over the agent's rows, an expression no index has."""


def direct(url: str, vectors: NDArray[np.float32]) -> dict[str, Any]:
    """pgvector itself, outside the adapter: HNSW (ef_search as the adapter sets it) against
    exact search, recall@10 and @20 and the latency of each."""
    found: dict[int, list[float]] = {10: [], 20: []}
    adapter: dict[int, list[float]] = {10: [], 20: []}
    short: dict[int, int] = {10: 0, 20: 0}
    hnsw_s, exact_s = [], []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        plan = _nearest(conn, "EXPLAIN " + HNSW_STATEMENT, vectors[0], 10)
        if not any("ix_vectors_hnsw" in row for row in plan):
            raise RuntimeError(f"the HNSW statement does not use the index: {plan}")
        for vector in vectors:
            began = time.perf_counter()
            truth = _nearest(conn, EXACT_STATEMENT, vector, 20)
            exact_s.append(time.perf_counter() - began)
            for k in found:
                began = time.perf_counter()
                got = _nearest(conn, HNSW_STATEMENT, vector, k)
                if k == 20:
                    hnsw_s.append(time.perf_counter() - began)
                found[k].append(len(set(got) & set(truth[:k])) / k)
                short[k] += len(got) < k
                # The adapter searches again exactly when the index gives fewer than k.
                adapter[k].append(found[k][-1] if len(got) == k else 1.0)
    return {
        "recall_at_10": round(statistics.fmean(found[10]), 4),
        "recall_at_20": round(statistics.fmean(found[20]), 4),
        "worst_recall_at_10": min(found[10]),
        "short_results": short,
        "adapter_recall_at_10": round(statistics.fmean(adapter[10]), 4),
        "adapter_recall_at_20": round(statistics.fmean(adapter[20]), 4),
        "hnsw_vector": summary(hnsw_s),
        "exact_vector": summary(exact_s),
    }


def _nearest(
    conn: psycopg.Connection[Any], statement: str, vector: NDArray[np.float32], limit: int
) -> list[str]:
    params = {"agent": AGENT, "embedder": SPACE.embedder, "query": _literal(vector), "limit": limit}
    return [str(row[0]) for row in conn.execute(statement.encode(), params)]


async def measure(plan: Plan, pg: PgServer, folder: Path) -> dict[str, Any]:
    mixture = Mixture(SPACE.dim)
    agents = [(AGENT, plan.chunks, SEED)] + [
        (f"agent_other{n}", plan.other_size, SEED - 1 - n) for n in range(plan.others)
    ]
    fill: dict[str, Any] = {}

    url = pg.new_database("search")
    await asyncio.to_thread(migrate.upgrade, url)
    pg_db = Database(url)
    definitions = await asyncio.to_thread(drop_search_indexes, url)
    fill["postgresql_copy_s"] = 0.0
    for agent, size, seed in agents:
        await add_agent(pg_db, agent)
        spent = await asyncio.to_thread(fill_postgres, url, agent, size, seed, mixture)
        fill["postgresql_copy_s"] += round(spent, 1)
    fill.update(await asyncio.to_thread(build_search_indexes, url, definitions))

    path = folder / "search.db"
    await asyncio.to_thread(create_schema, path)
    sqlite_db = Database(f"sqlite+aiosqlite:///{path}")
    fill["sqlite_s"] = 0.0
    for agent, size, seed in agents:
        await add_agent(sqlite_db, agent)
        spent = await asyncio.to_thread(fill_direct, path, agent, size, SPACE, seed, mixture.draw)
        fill["sqlite_s"] += round(spent, 1)

    texts = query_texts(SEED, plan.queries)
    vectors = mixture.draw(np.random.default_rng(SEED + 7), plan.queries)
    planted = Planted(dict(zip(texts, vectors, strict=True)))
    indexes: dict[str, SearchIndex] = {
        "sqlite": SqliteSearchIndex(sqlite_db),
        "postgresql": PostgresSearchIndex(pg_db),
    }
    kbs = {
        name: KnowledgeBase(db, index, lambda: planted)
        for (name, index), db in zip(indexes.items(), (sqlite_db, pg_db), strict=True)
    }
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in indexes}
    try:
        for name, index in indexes.items():  # warm up: the SQLite matrix, the term counts
            await paths(index, kbs[name], texts[:5], vectors[:5], 5)
        for round_no in range(plan.rounds):
            names = list(indexes) if round_no % 2 == 0 else list(indexes)[::-1]
            for name in names:
                for path_name, seconds in (
                    await paths(indexes[name], kbs[name], texts, vectors, plan.queries)
                ).items():
                    samples[name].setdefault(path_name, []).extend(seconds)
                print(f"round {round_no + 1} {name} done", flush=True)
        quality = await asyncio.to_thread(direct, url, vectors)
    finally:
        await pg_db.dispose()
        await sqlite_db.dispose()
    return {
        "fill": fill,
        "latency": {
            name: {p: summary(s) for p, s in per_path.items()} for name, per_path in samples.items()
        },
        "hnsw": quality,
    }


def run(plan: Plan) -> dict[str, Any]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-pgvector-") as folder:
        os.sched_setaffinity(0, {int(SERVER_CORE)})
        pg = PgServer()
        os.sched_setaffinity(0, {int(LOAD_CORE)})
        try:
            figures = asyncio.run(measure(plan, pg, Path(folder)))
        finally:
            pg.stop()
    return {
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "plan": vars(plan),
        "vectors": "mixture of Gaussians on the unit sphere: 256 topics x 8 subtopics, 384 dims",
        "load_average": {
            "start": [round(x, 2) for x in load_before],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        **figures,
    }


def markdown(report: dict[str, Any]) -> str:
    plan, load, latency, hnsw = (
        report["plan"], report["load_average"], report["latency"], report["hnsw"]
    )  # fmt: skip
    lines = [
        "# Search at scale: PostgreSQL (GIN, pgvector HNSW) against SQLite (issue 14)",
        "",
        f"On {report['machine']}, {report['date']}. One agent of {plan['chunks']:,} synthetic "
        f"chunks, {plan['others']} other agent(s) of {plan['other_size']:,} beside it; vectors: "
        f"{report['vectors']}. {plan['queries']} queries x {plan['rounds']} alternating "
        f"rounds, top {DEPTH}; the hybrid path without embedding the query. PostgreSQL on core "
        f"0, SQLite and the client on core 1. Load average (1, 5, 15 min) {load['start']} at the "
        f"start, {load['end']} at the end.",
        "",
        "| path | PostgreSQL p50 / p99 | SQLite p50 / p99 | ratio of p50 |",
        "|---|---|---|---|",
    ]
    for path in ("text", "vector", "hybrid"):
        pg, lite = latency["postgresql"][path], latency["sqlite"][path]
        lines.append(
            f"| {path} | {pg['p50_ms']} / {pg['p99_ms']} ms | {lite['p50_ms']} / "
            f"{lite['p99_ms']} ms | {pg['p50_ms'] / lite['p50_ms']:.2f} |"
        )
    lines += [
        f"| vector, pgvector HNSW (`HNSW_STATEMENT`, {plan['queries']} queries) | "
        f"{hnsw['hnsw_vector']['p50_ms']} / {hnsw['hnsw_vector']['p99_ms']} ms | | |",
        f"| vector, exact on PostgreSQL (`EXACT_STATEMENT`) | {hnsw['exact_vector']['p50_ms']} / "
        f"{hnsw['exact_vector']['p99_ms']} ms | | |",
        "",
        f"HNSW recall against exact search on PostgreSQL: @10 {hnsw['recall_at_10']}, "
        f"@20 {hnsw['recall_at_20']} (worst query @10: {hnsw['worst_recall_at_10']}). Queries "
        f"the index answered with fewer than 10 / 20 of the agent's rows: "
        f"{hnsw['short_results'][10]} / {hnsw['short_results'][20]} (pgvector 0.6 filters the "
        "other agents' rows out after the scan); the adapter searches those again exactly, "
        f"which makes its recall @10 {hnsw['adapter_recall_at_10']}, "
        f"@20 {hnsw['adapter_recall_at_20']}.",
        "",
        "Filling: " + ", ".join(f"{k} {v}" for k, v in report["fill"].items()) + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small corpus, to check")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = run(QUICK if args.quick else FULL)
    write_results("pgvector_quick" if args.quick else "pgvector", report, markdown(report))


if __name__ == "__main__":
    main()
