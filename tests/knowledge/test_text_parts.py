"""The SQLite adapter's text search from kept BM25 parts (`knowledge/index/impacts.py`) gives
FTS5's own ranking and scores: checked against FTS5 itself, asked the OR query directly, on a
corpus of skewed word frequencies, after writes of this process and of another connection,
and after its parts are evicted."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Connection, text

from palaver.knowledge import documents as repo
from palaver.knowledge.chunk import Chunk
from palaver.knowledge.documents import Document
from palaver.knowledge.index import impacts
from palaver.knowledge.index import sqlite as sqlite_index
from palaver.knowledge.index.base import Hit
from palaver.knowledge.index.impacts import Part, best
from palaver.knowledge.index.sqlite import (
    TEXT_SHARE,
    SqliteSearchIndex,
    query_terms,
    worth_scoring,
)
from palaver.store.db import Database
from palaver.store.tables.base import utcnow
from palaver.store.tables.knowledge import fts_table
from tests.knowledge.helpers import AGENT, OTHER_AGENT

WORDS = [f"{a}{b}" for a in ("kel", "mor", "tap", "vin", "sul") for b in ("an", "ex", "ol", "ur")]
"""Twenty made-up words, drawn with Zipf weights: the first few sit in half the chunks or
more (left out of scoring), the last in a handful."""


def corpus(rng: random.Random, count: int) -> list[str]:
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(3, 30))) + "." for _ in range(count)]


def queries(rng: random.Random, count: int) -> list[str]:
    made = ["kelan", "sulur morex", "unknownword kelan", "the", "sulur-sulur vinol"]
    while len(made) < count:
        made.append(" ".join(rng.choices([*WORDS, "absent", "what"], k=rng.randint(1, 4))))
    return made


async def add_document(
    db: Database, index: SqliteSearchIndex, agent: str, doc_id: str, texts: list[str]
) -> None:
    document = Document(
        doc_id, agent, f"{doc_id}.md", "markdown", 1, None, len(texts), doc_id, utcnow(), "owner"
    )
    parts = [
        (f"chunk_{doc_id}_{i}", Chunk(i, t, ("Guide",), None, 10)) for i, t in enumerate(texts)
    ]
    async with db.write() as tx:
        await repo.insert_with_chunks(tx.conn, document, parts)
        await index.add_text(tx, agent, [doc_id])


async def fts5_ranking(db: Database, agent: str, query: str) -> list[tuple[str, float]]:
    """FTS5 asked directly: every match of the OR of the terms worth scoring (counted here by
    FTS5 itself), with its bm25."""
    table = fts_table(agent)

    def ask(conn: Connection) -> list[tuple[str, float]]:
        terms = query_terms(query)
        if not terms:
            return []
        count = f"SELECT count(*) FROM {table} WHERE {table} MATCH :term"
        counts = {t: conn.execute(text(count), {"term": t}).scalar_one() for t in terms}
        chunks = conn.execute(
            text("SELECT count(*) FROM chunks WHERE agent_id = :agent"), {"agent": agent}
        ).scalar_one()
        chosen = worth_scoring(counts, chunks) if len(terms) > 1 else terms
        rows = conn.execute(
            text(
                f"SELECT c.id, bm25({table}) FROM {table} JOIN chunks AS c "
                f"ON c.seq = {table}.rowid WHERE {table} MATCH :q ORDER BY rank"
            ),
            {"q": " OR ".join(chosen)},
        )
        return [(chunk_id, -score) for chunk_id, score in rows]

    return await db.read_unit(ask)


def assert_same_ranking(hits: list[Hit], reference: list[tuple[str, float]], limit: int) -> None:
    """Same scores in the same order; rows of equal score may come in any order, as FTS5's
    own do, so each hit is checked against its own reference score."""
    assert len(hits) == min(limit, len(reference))
    scores = dict(reference)
    for hit, (_, expected) in zip(hits, reference, strict=False):
        assert hit.score == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert scores[hit.id] == pytest.approx(hit.score, rel=1e-12, abs=1e-15)


async def test_kept_parts_rank_and_score_as_fts5_bm25_over_the_same_terms(
    db: Database, index: SqliteSearchIndex
) -> None:
    rng = random.Random(12)
    for n in range(4):
        await add_document(db, index, AGENT, f"doc_a{n}", corpus(rng, 60))
    await add_document(db, index, OTHER_AGENT, "doc_b", corpus(rng, 100))
    for query in queries(rng, 60):
        reference = await fts5_ranking(db, AGENT, query)
        for limit in (20, 5):
            assert_same_ranking(await index.text_search(AGENT, query, limit), reference, limit)


async def test_writes_and_deletes_are_seen_by_the_next_search_as_fts5_sees_them(
    db: Database, index: SqliteSearchIndex
) -> None:
    """Every part depends on the table's row count and average length, so any write
    replaces them all: the kept ones never answer for a table that has changed."""
    rng = random.Random(5)
    await add_document(db, index, AGENT, "doc_a", corpus(rng, 80))
    query = "sulur vinol tapex"
    assert_same_ranking(
        await index.text_search(AGENT, query, 20), await fts5_ranking(db, AGENT, query), 20
    )
    await add_document(db, index, AGENT, "doc_b", ["sulur sulur vinol", *corpus(rng, 10)])
    after_write = await index.text_search(AGENT, query, 20)
    assert after_write[0].id == "chunk_doc_b_0"
    assert_same_ranking(after_write, await fts5_ranking(db, AGENT, query), 20)
    async with db.write() as tx:
        ids = await repo.chunk_ids(tx.conn, "doc_b")
        await index.delete(tx, AGENT, "chunk", ids)
        await repo.delete_document(tx.conn, "doc_b")
    after_delete = await index.text_search(AGENT, query, 20)
    assert "chunk_doc_b_0" not in {h.id for h in after_delete}
    assert_same_ranking(after_delete, await fts5_ranking(db, AGENT, query), 20)


async def test_a_write_through_another_connection_is_seen(
    db: Database, index: SqliteSearchIndex, tmp_path: Path
) -> None:
    """Another process writing the same file (a CLI command, say) is not announced to this
    one; FTS5's structure record, read with each search, tells the parts are out of date."""
    rng = random.Random(9)
    await add_document(db, index, AGENT, "doc_a", corpus(rng, 40))
    before = await index.text_search(AGENT, "sulor", 20)
    assert before == []
    table = fts_table(AGENT)
    other = sqlite3.connect(tmp_path / "palaver.db")
    with other:
        other.execute("UPDATE documents SET chunks = chunks + 1 WHERE id = 'doc_a'")
        other.execute(
            "INSERT INTO chunks (id, agent_id, document_id, ordinal, heading_path, tokens, "
            "content, context) VALUES ('chunk_late', ?, 'doc_a', 99, '[]', 3, "
            "'sulor sulor kelan', 'Guide')",
            (AGENT,),
        )
        other.execute(
            f"INSERT INTO {table}(rowid, context, content) SELECT seq, context, content "
            "FROM chunks WHERE id = 'chunk_late'"
        )
    other.close()
    after = await index.text_search(AGENT, "sulor", 20)
    assert [h.id for h in after] == ["chunk_late"]
    assert_same_ranking(
        await index.text_search(AGENT, "kelan sulor", 20),
        await fts5_ranking(db, AGENT, "kelan sulor"),
        20,
    )


async def test_text_parts_are_evicted_like_matrices_and_come_back_with_the_same_answers(
    db: Database,
) -> None:
    index = SqliteSearchIndex(db, cache_bytes=1)
    rng = random.Random(3)
    await add_document(db, index, AGENT, "doc_a", corpus(rng, 50))
    await add_document(db, index, OTHER_AGENT, "doc_b", corpus(rng, 50))
    first = await index.text_search(AGENT, "vinur kelex morol", 20)
    one = index.cached_bytes()
    assert one > 0
    await index.text_search(OTHER_AGENT, "tapan", 20)
    assert index.cached_bytes() < one, "the first agent's parts were dropped"
    assert await index.text_search(AGENT, "vinur kelex morol", 20) == first


def test_the_best_rows_sum_their_parts_and_break_ties_by_row() -> None:
    def part(rows: list[int], scores: list[float]) -> Part:
        return Part(np.array(rows, dtype=np.int64), np.array(scores, dtype=np.float64))

    parts = [part([5, 7, 9], [1.0, 2.0, 0.5]), part([3, 9], [2.0, 2.0]), part([], [])]
    assert best(parts, 10) == [(9, 2.5), (3, 2.0), (7, 2.0), (5, 1.0)]
    assert best(parts, 2) == [(9, 2.5), (3, 2.0)]
    assert best([part([], [])], 3) == []


async def test_one_agents_kept_parts_stay_within_their_share_of_the_cache(db: Database) -> None:
    limit = 3_000
    index = SqliteSearchIndex(db, cache_bytes=limit * TEXT_SHARE)
    rng = random.Random(8)
    await add_document(db, index, AGENT, "doc_a", corpus(rng, 120))
    for word in WORDS[4:]:
        hits = await index.text_search(AGENT, word, 20)
        assert_same_ranking(hits, await fts5_ranking(db, AGENT, word), 20)
        assert index.cached_bytes() <= limit


@pytest.mark.parametrize("common_rows", [40, 60, 90])
async def test_common_words_scored_only_where_they_can_reach_the_top_rank_as_fts5(
    db: Database, index: SqliteSearchIndex, monkeypatch: pytest.MonkeyPatch, common_rows: int
) -> None:
    """A common word not kept is scored only for the rows it could lift into the top, from
    its instances and the rows' lengths: the ranking and scores are still FTS5's own."""
    monkeypatch.setattr(impacts, "COMMON_ROWS", common_rows)
    pruned: list[bool] = []
    real = impacts._pruned

    def spy(*args: Any) -> Any:
        found = real(*args)
        pruned.append(found is not None)
        return found

    monkeypatch.setattr(impacts, "_pruned", spy)
    rng = random.Random(21)
    for n in range(4):
        await add_document(db, index, AGENT, f"doc_a{n}", corpus(rng, 60))
    await add_document(db, index, OTHER_AGENT, "doc_b", corpus(rng, 100))
    for query in queries(rng, 80):
        reference = await fts5_ranking(db, AGENT, query)
        for limit in (20, 5):
            index._parts.clear()  # every word new to the index, as after a write
            assert_same_ranking(await index.text_search(AGENT, query, limit), reference, limit)
    assert sum(pruned) >= 5, f"the common words were scored in part {sum(pruned)} times"
    # The background finishing of an earlier search may have finished the last one's parts
    # too: once it is done, the last search again, whose own finishing has not begun yet.
    await index.packed()
    index._parts.clear()
    await index.text_search(AGENT, query, 5)
    kept = index._parts[AGENT]
    unfinished = set(kept.unfinished)
    assert unfinished, "the last search scored a common word in part"
    await index.packed()
    assert not kept.unfinished and all(kept.holds(phrase) for phrase in unfinished)


async def test_a_word_stemmed_otherwise_than_fts5_does_is_never_scored_as_another_word(
    db: Database, index: SqliteSearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query's word folded here ("сценарий" loses its breve) is another word FTS5 also
    holds, in as many rows: the cut must see that those are other rows and ask FTS5."""
    monkeypatch.setattr(impacts, "COMMON_ROWS", 3)
    texts = (
        ["сценарий filler"] * 4
        + ["сценарии сценарии сценарии zz"] * 4
        + [f"heron {'pad ' * n}" for n in range(1, 7)]
        + ["other words here"] * 30
    )
    await add_document(db, index, AGENT, "doc_a", texts)
    for query in ("сценарий heron", "сценарий"):
        for limit in (3, 10):
            reference = await fts5_ranking(db, AGENT, query)
            assert_same_ranking(await index.text_search(AGENT, query, limit), reference, limit)
            await index.packed()


async def test_a_rare_word_is_searched_though_its_folded_form_is_everywhere(
    db: Database, index: SqliteSearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a query is left without text search (every word in half the chunks and in
    `UNHELPFUL_ROWS`), its words are counted as FTS5's terms: a fold made here would turn
    this rare word into a common one."""
    monkeypatch.setattr(sqlite_index, "UNHELPFUL_ROWS", 3)
    texts = ["сценарии one", "сценарии two", "сценарии three", "сценарий four"]
    await add_document(db, index, AGENT, "doc_a", texts)
    hits = await index.text_search(AGENT, "сценарий", 10)
    assert [h.id for h in hits] == ["chunk_doc_a_3"]
