"""Text search before and after issue 12, on the same data: one FTS5 table for all agents with a
count query per term (before) against one FTS5 table per agent with one vocabulary lookup
(after). One agent of `--size` chunks is queried while `--others` agents of as many chunks
share the database. Plain sqlite3, so the figures are the SQL's own; the two layouts are
queried in alternation, so a busy machine slows both alike.

    python -m bench.bench_text_layouts [--size 100000] [--others 5] [--queries 300]

Writes bench/results/text_layouts.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_knowledge import SEED, WORDS_PER_SYNTHETIC_CHUNK, vocabulary, zipf_text
from palaver.knowledge.index.sqlite import index_term, query_terms
from palaver.store.tables.knowledge import fts_ddl, fts_table

RESULTS = Path(__file__).parent / "results"
TOKENIZE = "tokenize='porter unicode61 remove_diacritics 2'"


def build(path: Path, agents: list[str], size: int) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE chunks (seq INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, "
        "context TEXT NOT NULL, content TEXT NOT NULL);"
        "CREATE INDEX ix_chunks_agent_id ON chunks (agent_id);"
        "CREATE TABLE documents (agent_id TEXT, chunks INTEGER);"
        f"CREATE VIRTUAL TABLE chunks_fts USING fts5(context, content, content='chunks', "
        f"content_rowid='seq', {TOKENIZE});"
    )
    for n, agent in enumerate(agents):
        rng = np.random.default_rng(SEED + n)
        words = vocabulary(20_000, rng)
        conn.executemany(
            "INSERT INTO chunks (agent_id, context, content) VALUES (?, '', ?)",
            ((agent, zipf_text(words, rng, WORDS_PER_SYNTHETIC_CHUNK)) for _ in range(size)),
        )
        conn.execute("INSERT INTO documents VALUES (?, ?)", (agent, size))
        for statement in fts_ddl(agent):
            conn.execute(statement)
        conn.execute(
            f"INSERT INTO {fts_table(agent)}(rowid, context, content) "
            "SELECT seq, context, content FROM chunks WHERE agent_id = ?",
            (agent,),
        )
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    conn.commit()
    conn.close()


def before(conn: sqlite3.Connection, agent: str, query: str) -> list[int]:
    """The query as `SqliteSearchIndex.text_search` ran it before issue 12."""
    terms = query_terms(query)
    if len(terms) >= 2:
        half = (conn.execute("SELECT count(*) FROM chunks").fetchone()[0] + 1) // 2
        rows = {
            t: conn.execute(
                "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
                "LIMIT ?)",
                (t, half),
            ).fetchone()[0]
            for t in terms
        }
        terms = [t for t in terms if rows[t] < half] or [min(terms, key=rows.__getitem__)]
    found = conn.execute(
        "SELECT c.seq, bm25(chunks_fts) AS rank FROM chunks_fts "
        "JOIN chunks AS c ON c.seq = chunks_fts.rowid "
        "WHERE chunks_fts MATCH ? AND c.agent_id = ? ORDER BY rank LIMIT 20",
        (" OR ".join(terms), agent),
    )
    return [row[0] for row in found]


def after(conn: sqlite3.Connection, agent: str, query: str) -> list[int]:
    """The query as `SqliteSearchIndex.text_search` ran it with one table per agent, term
    counts cached, before it kept each word's BM25 part (`bench_knowledge` times that)."""
    table = fts_table(agent)
    terms = query_terms(query)
    if len(terms) >= 2:
        stems = {t: index_term(t) or "" for t in terms}
        unknown = sorted({s for s in stems.values() if s not in _COUNTS})
        if unknown:
            marks = ", ".join("?" for _ in unknown)
            _COUNTS.update(dict.fromkeys(unknown, 0))
            _COUNTS.update(
                conn.execute(
                    f"SELECT term, doc FROM {table}_vocab WHERE term IN ({marks})",
                    unknown,
                )
            )
        total = conn.execute(
            "SELECT coalesce(sum(chunks), 0) FROM documents WHERE agent_id = ?", (agent,)
        ).fetchone()[0]
        half = (total + 1) // 2
        rows = {t: _COUNTS[stems[t]] for t in terms}
        terms = [t for t in terms if rows[t] < half] or [min(terms, key=rows.__getitem__)]
    found = conn.execute(
        f"SELECT c.seq, hit.rank FROM (SELECT rowid, rank FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY rank LIMIT 20) AS hit "
        "JOIN chunks AS c ON c.seq = hit.rowid WHERE c.agent_id = ? ORDER BY hit.rank",
        (" OR ".join(terms), agent),
    )
    return [row[0] for row in found]


_COUNTS: dict[str, int] = {}
"""The queried agent's term counts, as `SqliteSearchIndex` caches them."""


def timed(
    search: Callable[[sqlite3.Connection, str, str], object],
    conn: sqlite3.Connection,
    agent: str,
    query: str,
) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    search(conn, agent, query)
    return time.perf_counter() - wall, time.thread_time() - cpu


def summary(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "median_ms": round(statistics.median(ms), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
    }


def main(size: int, others: int, queries: int) -> dict[str, Any]:
    agents = ["agent_queried", *(f"agent_other{n}" for n in range(others))]
    rng = np.random.default_rng(SEED)
    words = vocabulary(20_000, np.random.default_rng(SEED))
    texts = [
        f"how does the {zipf_text(words, rng, 3)[:-1]} affect {zipf_text(words, rng, 2)}"
        for _ in range(queries)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "layouts.db"
        started = time.perf_counter()
        build(path, agents, size)
        build_seconds = time.perf_counter() - started
        conn = sqlite3.connect(path)
        times: dict[str, dict[str, list[float]]] = {
            name: {"wall": [], "cpu": []} for name in ("before", "after")
        }
        same = 0
        for query in texts:
            old, new = before(conn, agents[0], query), after(conn, agents[0], query)
            same += set(old) == set(new)
            for name, search in (("before", before), ("after", after)):
                wall, cpu = timed(search, conn, agents[0], query)
                times[name]["wall"].append(wall)
                times[name]["cpu"].append(cpu)
        conn.close()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "chunks_queried_agent": size,
        "other_agents": others,
        "build_seconds": round(build_seconds, 1),
        "queries": queries,
        "same_top20_sets": same,
        "before": {k: summary(v) for k, v in times["before"].items()},
        "after": {k: summary(v) for k, v in times["after"].items()},
    }


def markdown_report(results: dict[str, Any]) -> str:
    b, a = results["before"], results["after"]
    return "\n".join(
        [
            "# Text search: one FTS5 table for all agents vs one per agent",
            "",
            f"Run {results['date']}, load average {results['load_average']}; one agent of "
            f"{results['chunks_queried_agent']:,} synthetic chunks queried, "
            f"{results['other_agents']} other agents of as many in the same database; "
            f"{results['queries']} queries, top 20 "
            f"(same top-20 set in {results['same_top20_sets']}: IDF and the common-term cut "
            "are now the agent's own, not the whole database's).",
            "",
            "| layout | wall median / p99 | CPU median / p99 |",
            "|---|---|---|",
            f"| before: shared table, count query per term | {b['wall']['median_ms']} / "
            f"{b['wall']['p99_ms']} ms | {b['cpu']['median_ms']} / {b['cpu']['p99_ms']} ms |",
            f"| after: table per agent, one vocabulary lookup | {a['wall']['median_ms']} / "
            f"{a['wall']['p99_ms']} ms | {a['cpu']['median_ms']} / {a['cpu']['p99_ms']} ms |",
            "",
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--others", type=int, default=5)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    results = main(args.size, args.others, args.queries)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "text_layouts.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "text_layouts.md").write_text(markdown_report(results))
    print(markdown_report(results))
