"""Large matrices are searched through a packed int8 scan (`knowledge/index/int8_scan.py`), yet
their answers are the exact float32 top-k: checked against a plain float32 scan on random
rows, clustered rows, rows nearly equal to the query, with filters, with rows appended after
the scan was made, and with too few candidates for the int8 ranking alone to be right."""

from __future__ import annotations

import numpy as np
import pytest

from palaver.knowledge.index import int8_scan, sqlite
from palaver.knowledge.index.base import Entry, Hit, Space
from palaver.knowledge.index.int8_scan import PackedScan, encode_query
from palaver.knowledge.index.matrix import VectorMatrix
from palaver.knowledge.index.sqlite import SqliteSearchIndex
from palaver.store.db import Database
from tests.cpu import instruction_sets
from tests.knowledge.helpers import AGENT

SPACE = Space("test/int8", 64)
ROWS = 5_000
"""More than one block of `int8_scan._BLOCK` rows."""


def unit_rows(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, count: int, dim: int = SPACE.dim) -> np.ndarray:
    """Rows around 40 centres, as embeddings of texts on a few subjects are."""
    centres = rng.standard_normal((40, dim))
    picked = centres[rng.integers(0, 40, count)]
    return unit_rows(picked + 0.35 * rng.standard_normal((count, dim)))


def packed(rows: np.ndarray, types: list[str | None] | None = None) -> VectorMatrix:
    matrix = VectorMatrix.sized(SPACE, len(rows))
    kinds = types or [None] * len(rows)
    matrix.extend([Entry(f"v{i}", type=kinds[i]) for i in range(len(rows))], rows)
    matrix.attach(PackedScan(rows, matrix.version))
    assert matrix.snapshot().scan is not None
    return matrix


def assert_exact(matrix: VectorMatrix, query: np.ndarray, k: int, type: str | None = None) -> None:
    snapshot = matrix.snapshot()
    scores = snapshot.matrix @ query
    if type is not None:
        scores = np.where([t == type for t in snapshot.types[: snapshot.size]], scores, -np.inf)
    order = np.lexsort((np.arange(snapshot.size), -scores))[:k]
    hits = snapshot.top(query, k, type=type)
    assert [h.id for h in hits] == [snapshot.ids[i] for i in order]
    assert np.allclose([h.score for h in hits], scores[order], atol=1e-6)


def near(rows: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
    return unit_rows(rows + noise * rng.standard_normal(rows.shape))


@pytest.mark.parametrize("shape", ["random", "clustered"])
def test_a_packed_matrix_answers_the_exact_top_k(shape: str) -> None:
    rng = np.random.default_rng(1)
    rows = (
        unit_rows(rng.standard_normal((ROWS, SPACE.dim)))
        if shape == "random"
        else clustered(rng, ROWS)
    )
    matrix = packed(rows)
    for n in range(20):
        query = near(rows[n * 97 : n * 97 + 1], rng, 0.3 if n % 2 else 0.02)[0]
        for k in (1, 20):
            assert_exact(matrix, query, k)


def test_rows_nearly_equal_to_the_query_are_ranked_exactly_with_too_few_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hundreds of near-duplicates differ by less than the int8 error: the bounds must pull
    every one that may belong into the exact scoring, even from a single candidate."""
    monkeypatch.setattr(int8_scan, "CANDIDATES", 1)
    rng = np.random.default_rng(2)
    query = unit_rows(rng.standard_normal((1, SPACE.dim)))[0]
    rows = np.vstack([clustered(rng, ROWS), near(np.tile(query, (500, 1)), rng, 0.002)])
    rng.shuffle(rows)
    assert_exact(packed(rows), query, 20)


def test_filters_and_rows_appended_after_the_scan_keep_it_exact() -> None:
    rng = np.random.default_rng(3)
    rows = clustered(rng, ROWS)
    types: list[str | None] = ["members" if i % 7 == 0 else "owner" for i in range(ROWS)]
    matrix = packed(rows, types)
    query = near(rows[11:12], rng, 0.1)[0]
    assert_exact(matrix, query, 20, type="members")
    late = near(np.tile(query, (30, 1)), rng, 0.05)
    matrix.extend([Entry(f"late{i}", type="members") for i in range(30)], late)
    assert matrix.snapshot().scan is not None, "appended rows are scored beside the scan"
    assert matrix.snapshot().top(query, 1)[0].id.startswith("late")
    assert_exact(matrix, query, 20)
    assert_exact(matrix, query, 20, type="members")


def test_replacing_or_removing_rows_retires_the_scan() -> None:
    rng = np.random.default_rng(4)
    rows = clustered(rng, ROWS)
    matrix = packed(rows)
    query = near(rows[5:6], rng, 0.05)[0]
    matrix.upsert([Entry("v5")], -query[None, :])
    assert matrix.snapshot().scan is None and matrix.needs_scan() is False  # below the size
    assert_exact(matrix, query, 20)
    matrix.attach(PackedScan(matrix.snapshot().matrix, matrix.version))
    matrix.remove(["v6"])
    assert matrix.snapshot().scan is None
    assert_exact(matrix, query, 20)


def shaped(rng: np.random.Generator, shape: str, count: int, dim: int) -> np.ndarray:
    """Unit rows: Gaussian, clustered, or sparse and spiky (a few large components, the rest
    near zero: codes at the ends of the range, where a saturating kernel goes wrong)."""
    if shape == "random":
        return unit_rows(rng.standard_normal((count, dim)))
    if shape == "clustered":
        return clustered(rng, count, dim)
    spiky = 0.01 * rng.standard_normal((count, dim))
    hot = rng.integers(0, dim, (count, 4))
    np.put_along_axis(spiky, hot, rng.choice([-1.0, 1.0], (count, 4)), axis=1)
    return unit_rows(spiky)


@pytest.mark.parametrize("shape", ["random", "clustered", "spiky"])
def test_the_int8_error_stays_within_its_bound(shape: str) -> None:
    """On every CPU: the kernel must compute the products exactly (see `int8_scan`)."""
    for seed in range(8):
        rng = np.random.default_rng(100 * seed + len(shape))
        dim = (64, 384)[seed % 2]
        rows = shaped(rng, shape, 2_000, dim)
        scan = PackedScan(rows, 0)
        queries = [shaped(rng, kind, 1, dim)[0] for kind in ("random", "clustered", "spiky")]
        for query in [*queries, rows[seed]]:
            query_codes, query_scale = encode_query(query)
            error = np.abs(scan.approximate(query_codes, query_scale) - rows @ query)
            bounds = scan.error_bounds(query, query_codes, query_scale)
            over = int((error > bounds).sum())
            assert over == 0, f"{over} rows beyond their bound on {instruction_sets()}"
            assert np.median(bounds) < 0.05, "a bound this loose would score everything exactly"


def test_the_kernel_multiplies_the_extreme_codes_exactly() -> None:
    """Codes at the ends of both ranges, the case where AVX2's `vpmaddubsw` saturates."""
    dim = 64
    signs = np.where(np.arange(dim) % 2 == 0, 1.0, -1.0).astype(np.float32)
    rows = np.vstack([np.ones(dim), -np.ones(dim), signs, -signs]).astype(np.float32)
    rows = np.tile(rows, (8, 1))
    scan = PackedScan(unit_rows(rows), 0)
    for query in (np.ones(dim, np.float32), -np.ones(dim, np.float32), signs):
        query_codes, _ = encode_query(unit_rows(query[None, :])[0])
        found = scan._session.run(None, {"query": query_codes})[0].reshape(-1)
        expected = query_codes.astype(np.int64) @ scan._codes_t.astype(np.int64)
        assert np.array_equal(found, expected.reshape(-1)), f"on {instruction_sets()}"


async def searched_once(
    db: Database, monkeypatch: pytest.MonkeyPatch, seed: int
) -> tuple[SqliteSearchIndex, VectorMatrix, np.ndarray, list[Hit]]:
    """An index of 800 clustered rows (packed from 500 on), searched once and packed: the
    index, its matrix, the query and its first hits."""
    monkeypatch.setattr(int8_scan, "PREFILTER_ROWS", 500)
    rng = np.random.default_rng(seed)
    rows = clustered(rng, 800)
    index = SqliteSearchIndex(db)
    entries = [Entry(f"chunk_{i}") for i in range(len(rows))]
    async with db.write() as tx:
        await index.put(tx, AGENT, "chunk", entries, rows, SPACE)
    query = near(rows[3:4], rng, 0.1)[0]
    first = await index.vector_search(AGENT, "chunk", query, SPACE, 20)
    await index.packed()
    matrix = index._matrices[(AGENT, "chunk")]
    assert matrix.snapshot().scan is not None
    return index, matrix, query, first


async def test_the_index_packs_a_large_matrix_after_its_first_search_and_answers_the_same(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, matrix, query, first = await searched_once(db, monkeypatch, 6)
    packed_hits = await index.vector_search(AGENT, "chunk", query, SPACE, 20)
    assert [h.id for h in packed_hits] == [h.id for h in first]
    assert np.allclose([h.score for h in packed_hits], [h.score for h in first], atol=1e-6)
    async with db.write() as tx:
        await index.put(tx, AGENT, "chunk", [Entry(first[0].id)], -query[None, :], SPACE)
    assert matrix.snapshot().scan is None, "a replaced row retires the scan"
    again = await index.vector_search(AGENT, "chunk", query, SPACE, 20)
    assert [h.id for h in again] == [h.id for h in first[1:]] + [again[-1].id]
    assert again[-1].id != first[0].id


async def test_a_matrix_whose_rows_keep_changing_gets_a_new_scan_at_most_once_an_interval(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, matrix, query, _ = await searched_once(db, monkeypatch, 7)

    async def replace_and_search(row: int) -> list[str]:
        async with db.write() as tx:
            await index.put(tx, AGENT, "chunk", [Entry(f"chunk_{row}")], -query[None, :], SPACE)
        hits = await index.vector_search(AGENT, "chunk", query, SPACE, 20)
        await index.packed()
        return [h.id for h in hits]

    for row in range(5):
        hits = await replace_and_search(row)
        assert matrix.snapshot().scan is None, "no new scan within the interval"
        snapshot = matrix.snapshot()
        assert hits == [snapshot.ids[i] for i in np.argsort(-(snapshot.matrix @ query))[:20]]
    monkeypatch.setattr(sqlite, "PACK_INTERVAL_SECONDS", 0.0)
    await replace_and_search(5)
    assert matrix.snapshot().scan is not None, "once the interval is over, the next is made"
