"""Knowledge-base benchmark: ingest rate and hybrid query latency at 10,000 and 100,000 chunks.

Ingest goes through the real path (parse, chunk, embed with the local model, store, index).
The query scales are filled with synthetic chunks: text drawn from a Zipf-distributed
vocabulary and random unit vectors, written through the same repository and index calls,
since embedding 100,000 real chunks would take hours on two cores. Queries are real: each is
embedded by the local model and runs the whole hybrid search (FTS5 BM25 top 20, exact cosine
top 20, fusion, chunk fetch), without re-scoring, through `KnowledgeBase.query`: what
`POST /api/rag/query` calls once it has parsed the request (HTTP itself is not timed).

Another set of queries over the same words runs first, through the whole query, while no
query has yet asked FTS5 for their words ("new queries"). Then the parts of the main set are
timed apart, one query after another; text search is timed again after
the query pass, when the index keeps the BM25 parts of the words it has seen (words new to it,
or a table changed since, cost FTS5's own scoring once: the "first sight" figure). Timing
starts once the agent's matrix is loaded and its int8 scan made (a server makes it in the
background after the first search, which is answered in float32 meanwhile).

    python bench/bench_knowledge.py [--queries 200] [--scales 10000,100000]

Writes bench/results/knowledge.json and bench/results/knowledge.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import create_engine, insert

from palaver.ids import new_id
from palaver.knowledge.embed import LocalEmbedder, Precision
from palaver.knowledge.index.base import Space
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.knowledge.service import KnowledgeBase
from palaver.store.db import Database
from palaver.store.tables.base import metadata, utcnow
from palaver.store.tables.core import agents
from palaver.store.tables.knowledge import (
    chunks,
    documents,
    fts_ddl,
    fts_table,
    memories,
    memory_versions,
    vectors,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

RESULTS = Path(__file__).parent / "results"
WORDS_PER_SYNTHETIC_CHUNK = 150
CHUNKS_PER_DOCUMENT = 1000
SMALL_DOCUMENTS = 300
SEED = 20260401

SENTENCES = [
    "The harbour crane lifts containers from the ship onto waiting trucks.",
    "Engineers measure the vibration of the bridge every morning at dawn.",
    "A cooperative of farmers shares tractors, seed drills and storage barns.",
    "The library extended its opening hours during the examination period.",
    "Solar panels on the depot roof cover most of the workshop's electricity.",
    "Volunteers repair bicycles for children every second Saturday.",
    "The committee approved the budget after a long debate about maintenance.",
    "Rain gauges in the valley report to the flood warning centre each hour.",
]


def create_schema(path: Path) -> None:
    """The agents table and the knowledge tables as revision 0002_knowledge makes them."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        tables = [agents, documents, chunks, memories, memory_versions, vectors]
        metadata.create_all(conn, tables=tables)
    engine.dispose()


async def add_agent(db: Database, agent_id: str) -> None:
    now = utcnow()
    async with db.write() as tx:
        await tx.conn.execute(
            insert(agents).values(
                id=agent_id,
                name=agent_id,
                name_key=agent_id,
                avatar="📚",
                description="",
                model="builtin/echo",
                tools=[],
                soul="",
                auto_inject_memory=False,
                created_at=now,
                updated_at=now,
            )
        )


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """Made-up words of two to four syllables (70 syllables give millions of them)."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < size:
        picked = rng.integers(0, len(syllables), size=int(rng.integers(2, 5)))
        words.add("".join(syllables[p] for p in picked))
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


def zipf_text(words: list[str], rng: np.random.Generator, count: int) -> str:
    ranks = np.minimum(rng.zipf(1.3, size=count), len(words)) - 1
    return " ".join(words[r] for r in ranks) + "."


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def summary(values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    return {
        "median_ms": round(statistics.median(ms), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
    }


def long_markdown(rng: np.random.Generator, sections: int, paragraphs: int) -> bytes:
    parts = ["# Operations Manual\n"]
    for s in range(sections):
        parts.append(f"## Section {s}\n")
        for _ in range(paragraphs):
            picked = rng.choice(len(SENTENCES), size=5)
            parts.append(" ".join(SENTENCES[i] for i in picked) + "\n")
    return "\n".join(parts).encode()


def pdf_pages(rng: np.random.Generator, pages: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for page in range(pages):
        pdf.add_page()
        paragraphs = []
        for _ in range(4):
            picked = rng.choice(len(SENTENCES), size=5)
            paragraphs.append(" ".join(SENTENCES[i] for i in picked))
        pdf.multi_cell(0, 5, f"Page {page + 1}.\n\n" + "\n\n".join(paragraphs))
    return bytes(pdf.output())


async def bench_ingest(kb: KnowledgeBase, agent: str, rng: np.random.Generator) -> dict[str, Any]:
    markdown = long_markdown(rng, sections=20, paragraphs=8)
    started = time.perf_counter()
    doc = (await kb.ingest(agent, "manual.md", markdown)).document
    md_seconds = time.perf_counter() - started

    pdf = await asyncio.to_thread(pdf_pages, rng, 200)
    started = time.perf_counter()
    pdf_doc = (await kb.ingest(agent, "report.pdf", pdf)).document
    pdf_seconds = time.perf_counter() - started
    notes = [
        f"Note {n}. {SENTENCES[n % len(SENTENCES)]} {SENTENCES[(n * 3) % len(SENTENCES)]}".encode()
        for n in range(SMALL_DOCUMENTS)
    ]
    started = time.perf_counter()
    small = await asyncio.gather(
        *(kb.ingest(agent, f"note-{n}.txt", data) for n, data in enumerate(notes))
    )
    small_seconds = time.perf_counter() - started
    small_chunks = sum(r.document.chunks for r in small)
    return {
        "small": {
            "documents": SMALL_DOCUMENTS,
            "chunks": small_chunks,
            "seconds": round(small_seconds, 2),
            "documents_per_second": round(SMALL_DOCUMENTS / small_seconds, 1),
            "chunks_per_second": round(small_chunks / small_seconds, 1),
        },
        "markdown": {
            "bytes": len(markdown),
            "chunks": doc.chunks,
            "seconds": round(md_seconds, 2),
            "chunks_per_second": round(doc.chunks / md_seconds, 1),
        },
        "pdf": {
            "bytes": len(pdf),
            "pages": pdf_doc.pages,
            "chunks": pdf_doc.chunks,
            "seconds": round(pdf_seconds, 2),
            "pages_per_second": round((pdf_doc.pages or 0) / pdf_seconds, 1),
            "chunks_per_second": round(pdf_doc.chunks / pdf_seconds, 1),
        },
    }


Vectors = Callable[[np.random.Generator, int], "NDArray[np.float32]"]
"""Draws `count` unit vectors of the corpus from the generator."""


def random_unit(dim: int) -> Vectors:
    def draw(rng: np.random.Generator, count: int) -> NDArray[np.float32]:
        rows = rng.standard_normal((count, dim)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        return rows

    return draw


@dataclass
class SyntheticDocument:
    id: str
    start: int
    chunk_ids: list[str]
    texts: list[str]
    vectors: NDArray[np.float32]


def synthetic_documents(total: int, seed: int, vectors: Vectors) -> Iterator[SyntheticDocument]:
    """`total` synthetic chunks in documents of 1,000: Zipf-distributed words, and vectors
    from `vectors`; the same seed gives the same texts and vectors (not the same ids)."""
    rng = np.random.default_rng(seed)
    words = vocabulary(20_000, rng)
    for start in range(0, total, CHUNKS_PER_DOCUMENT):
        count = min(CHUNKS_PER_DOCUMENT, total - start)
        texts = [zipf_text(words, rng, WORDS_PER_SYNTHETIC_CHUNK) for _ in range(count)]
        ids = [new_id("chunk") for _ in range(count)]
        yield SyntheticDocument(new_id("doc"), start, ids, texts, vectors(rng, count))


def query_texts(seed: int, count: int, draw: int = SEED) -> list[str]:
    """Queries in the words of the corpus `synthetic_documents(..., seed, ...)` made; `draw`
    seeds which words."""
    rng = np.random.default_rng(draw)
    words = vocabulary(20_000, np.random.default_rng(seed))
    return [
        f"how does the {zipf_text(words, rng, 3)[:-1]} affect {zipf_text(words, rng, 2)}"
        for _ in range(count)
    ]


def fill_direct(
    path: Path, agent: str, total: int, space: Space, seed: int, vectors: Vectors | None = None
) -> float:
    """Synthetic chunks written straight into SQLite (documents of 1,000 chunks, their text
    index and, unless `vectors` draws others, random unit vectors), as the repository and the
    index would store them: the HTTP path would take hours at 600,000 chunks."""
    started = time.perf_counter()
    conn = sqlite3.connect(path)
    try:
        now = utcnow().isoformat()
        for doc in synthetic_documents(total, seed, vectors or random_unit(space.dim)):
            count = len(doc.chunk_ids)
            conn.execute(
                "INSERT INTO documents (id, agent_id, name, kind, bytes, pages, chunks, "
                "content_hash, created_at, visibility) VALUES (?, ?, ?, 'text', 0, NULL, ?, ?, ?, "
                "'owner')",
                (doc.id, agent, f"synthetic-{doc.start}.txt", count, new_id("h"), now),
            )
            conn.executemany(
                "INSERT INTO chunks (id, agent_id, document_id, ordinal, heading_path, page, "
                "tokens, content, context) VALUES (?, ?, ?, ?, '[]', NULL, 0, ?, ?)",
                [
                    (doc.chunk_ids[i], agent, doc.id, i, doc.texts[i], f"synthetic {doc.start}")
                    for i in range(count)
                ],
            )
            conn.executemany(
                "INSERT INTO vectors (item_id, agent_id, kind, channel_id, type, embedder, dim, "
                "data) VALUES (?, ?, 'chunk', NULL, 'owner', ?, ?, ?)",
                [
                    (doc.chunk_ids[i], agent, space.embedder, space.dim, doc.vectors[i].tobytes())
                    for i in range(count)
                ],
            )
        for statement in fts_ddl(agent):
            conn.execute(statement)
        conn.execute(
            f"INSERT INTO {fts_table(agent)}(rowid, context, content) "
            "SELECT seq, context, content FROM chunks WHERE agent_id = ?",
            (agent,),
        )
        conn.commit()
    finally:
        conn.close()
    return time.perf_counter() - started


_SERVING_RSS = """
import asyncio, sys
from bench.bench_knowledge import SEED, query_texts, rss_mb
from palaver.knowledge.embed import LocalEmbedder
from palaver.knowledge.index.base import Space
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.store.db import Database

async def main(path, agent, precision, scale, queries):
    embedder = LocalEmbedder(precision=precision)
    vector = await embedder.embed_query("warm up")
    db = Database(f"sqlite+aiosqlite:///{path}")
    index = SqliteSearchIndex(db)
    for query in query_texts(SEED + int(scale), int(queries)):
        await index.text_search(agent, query, 20)
    await index.vector_search(agent, "chunk", vector, Space(embedder.name, embedder.dim), 20)
    await index.packed()
    print(rss_mb(), round(index.cached_bytes() / 2**20, 1))
    await db.dispose()

asyncio.run(main(*sys.argv[1:]))
"""


def serving_rss_mb(
    path: Path, agent: str, precision: str, scale: int, queries: int
) -> tuple[float, float]:
    """RSS of a fresh process holding what a server holds for one agent's queries: the model,
    that agent's matrix and the text parts of the benchmark's queries (and those parts' MB).
    This process's own RSS also carries the synthetic fill's heap."""
    run = subprocess.run(
        [sys.executable, "-c", _SERVING_RSS, str(path), agent, precision, str(scale), str(queries)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    rss, cached = run.stdout.strip().splitlines()[-1].split()
    return float(rss), float(cached)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def bench_scale(
    path: Path,
    db: Database,
    kb: KnowledgeBase,
    index: SqliteSearchIndex,
    embedder: LocalEmbedder,
    scale: int,
    queries: int,
) -> dict[str, Any]:
    agent = f"agent_bench{scale}"
    await add_agent(db, agent)
    space = Space(embedder.name, embedder.dim)
    fill_seconds = await asyncio.to_thread(fill_direct, path, agent, scale, space, SEED + scale)
    texts = query_texts(SEED + scale, queries)
    started = time.perf_counter()
    vector = (await embedder.embed(["warm up"]))[0]
    await index.vector_search(agent, "chunk", vector, space, 20)
    load_seconds = time.perf_counter() - started
    await index.packed()

    cold_s = []
    for query in query_texts(SEED + scale, queries, draw=SEED + 1):
        t0 = time.perf_counter()
        await kb.query(agent, query, top_k=5)
        cold_s.append(time.perf_counter() - t0)
    embed_s, text_s, vector_s, total_s = [], [], [], []
    for query in texts:
        t0 = time.perf_counter()
        vector = await embedder.embed_query(query)
        t1 = time.perf_counter()
        await index.text_search(agent, query, 20)
        t2 = time.perf_counter()
        await index.vector_search(agent, "chunk", vector, space, 20)
        t3 = time.perf_counter()
        embed_s.append(t1 - t0)
        text_s.append(t2 - t1)
        vector_s.append(t3 - t2)
    for query in texts:
        t0 = time.perf_counter()
        result = await kb.query(agent, query, top_k=5)
        total_s.append(time.perf_counter() - t0)
        assert result.results
    seen_s = []
    for query in texts:
        t0 = time.perf_counter()
        await index.text_search(agent, query, 20)
        seen_s.append(time.perf_counter() - t0)
    serving_rss, cached_mb = await asyncio.to_thread(
        serving_rss_mb, path, agent, embedder.precision, scale, queries
    )
    return {
        "chunks": scale,
        "synthetic": True,
        "words_per_chunk": WORDS_PER_SYNTHETIC_CHUNK,
        "fill_seconds": round(fill_seconds, 1),
        "matrix_load_ms": round(load_seconds * 1000, 1),
        "queries": queries,
        "query": summary(total_s),
        "query_first_sight": summary(cold_s),
        "embed_query": summary(embed_s),
        "text_search": summary(text_s),
        "text_search_seen": summary(seen_s),
        "vector_search": summary(vector_s),
        "rss_mb": rss_mb(),
        "serving_rss_mb": serving_rss,
        "serving_cached_mb": cached_mb,
    }


def markdown_report(results: dict[str, Any]) -> str:
    ingest = results["ingest"]
    lines = [
        "# Knowledge-base benchmark",
        "",
        f"Run {results['date']} on {results['machine']['cpus']} CPUs "
        f"({results['machine']['processor']}), load average at start "
        f"{results['machine']['load_average']}; embedder {results['embedder']}.",
        "",
        "## Ingest (real parse, chunk, embed, store)",
        "",
        "| document | chunks | seconds | rate |",
        "|---|---|---|---|",
        f"| {ingest['small']['documents']} short notes, uploaded at once | "
        f"{ingest['small']['chunks']} | {ingest['small']['seconds']} | "
        f"{ingest['small']['documents_per_second']} documents/s, "
        f"{ingest['small']['chunks_per_second']} chunks/s |",
        f"| Markdown, {ingest['markdown']['bytes']:,} bytes | {ingest['markdown']['chunks']} | "
        f"{ingest['markdown']['seconds']} | {ingest['markdown']['chunks_per_second']} chunks/s |",
        f"| PDF, {ingest['pdf']['pages']} pages | {ingest['pdf']['chunks']} | "
        f"{ingest['pdf']['seconds']} | {ingest['pdf']['pages_per_second']} pages/s, "
        f"{ingest['pdf']['chunks_per_second']} chunks/s |",
        "",
        "## Hybrid query latency, one agent (top 20 text + top 20 vector, fused, top 5)",
        "",
        f"{results['other_agents']['count']} other agents of "
        f"{results['other_agents']['chunks_each']:,} chunks each share the database. RSS: "
        f"{results['rss_mb']['start']} MB at start, {results['rss_mb']['model_loaded']} MB with "
        'the model loaded; "RSS" is this process after the agent\'s matrix is loaded (its heap '
        'also holds the synthetic fill\'s leftovers), "RSS serving" a fresh process holding '
        "the model, only that agent's matrix and the BM25 parts of these queries' words "
        "(their MB in brackets, with the matrix's), as a server answering its queries does. "
        "\"Text, first sight\" is each query's first search, when its words' BM25 parts are "
        'asked of FTS5; "seen" the same queries again. "New queries" are another 200 queries '
        "over the same words, run through the whole query first, before anything has asked "
        "FTS5 for their words: each pays for the words no query before it had (as the first "
        'queries after a write to the agent\'s knowledge do); "query" is the first 200 once '
        "their words are kept.",
        "",
        "Chunks are SYNTHETIC: Zipf-distributed words "
        f"({WORDS_PER_SYNTHETIC_CHUNK} per chunk) and random unit vectors, stored through the "
        "real repository and index. Queries are real and embedded by the local model.",
        "",
        "| chunks | query median | query p99 | new queries: median / p99 | embed median "
        "| text, first sight: median / p99 | text, seen: median / p99 | vector median / p99 "
        "| matrix load | RSS | RSS serving |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["query"]:
        lines.append(
            f"| {row['chunks']:,} | {row['query']['median_ms']} ms | {row['query']['p99_ms']} ms | "
            f"{row['query_first_sight']['median_ms']} / {row['query_first_sight']['p99_ms']} ms | "
            f"{row['embed_query']['median_ms']} ms | "
            f"{row['text_search']['median_ms']} / {row['text_search']['p99_ms']} ms | "
            f"{row['text_search_seen']['median_ms']} / {row['text_search_seen']['p99_ms']} ms | "
            f"{row['vector_search']['median_ms']} / {row['vector_search']['p99_ms']} ms | "
            f"{row['matrix_load_ms']} ms | {row['rss_mb']} MB | {row['serving_rss_mb']} MB "
            f"({row['serving_cached_mb']} MB) |"
        )
    return "\n".join(lines) + "\n"


async def main(
    queries: int, scales: list[int], others: int, other_size: int, precision: Precision = "float"
) -> dict[str, Any]:
    rss_start = rss_mb()
    embedder = LocalEmbedder(precision=precision)
    await asyncio.to_thread(embedder.load)
    await embedder.embed(["warm up"])
    rss_model = rss_mb()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        await asyncio.to_thread(create_schema, path)
        db = Database(f"sqlite+aiosqlite:///{path}")
        index = SqliteSearchIndex(db)
        kb = KnowledgeBase(db, index, lambda: embedder)
        try:
            await add_agent(db, "agent_ingest")
            ingest = await bench_ingest(kb, "agent_ingest", np.random.default_rng(SEED))
            for n in range(others):
                await add_agent(db, f"agent_other{n}")
                space = Space(embedder.name, embedder.dim)
                await asyncio.to_thread(
                    fill_direct, path, f"agent_other{n}", other_size, space, SEED - n
                )
            rows = [await bench_scale(path, db, kb, index, embedder, s, queries) for s in scales]
        finally:
            await db.dispose()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "load_average": [],
        },
        "embedder": embedder.name,
        "other_agents": {"count": others, "chunks_each": other_size},
        "rss_mb": {"start": rss_start, "model_loaded": rss_model},
        "ingest": ingest,
        "query": rows,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scales", default="10000,100000")
    parser.add_argument("--others", type=int, default=5, help="other agents in the database")
    parser.add_argument("--other-size", type=int, default=100_000, help="chunks of each")
    parser.add_argument("--precision", choices=["float", "int8"], default="float")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = os.getloadavg()
    scales = [int(s) for s in args.scales.split(",")]
    results = asyncio.run(main(args.queries, scales, args.others, args.other_size, args.precision))
    results["machine"]["load_average"] = [round(x, 2) for x in load]
    RESULTS.mkdir(exist_ok=True)
    stem = "knowledge" if args.precision == "float" else f"knowledge_{args.precision}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(markdown_report(results))
    print(markdown_report(results))
