"""Large matrices scan int8 codes first (`knowledge/index/int8_scan.py`), yet their answers are
the exact float32 top-k: checked against a plain float32 scan on random rows, clustered rows,
rows nearly equal to the query, with filters, after writes, and with too few candidates for
the int8 ranking alone to be right."""

from __future__ import annotations

import numpy as np
import pytest

from palaver.knowledge.index import matrix as matrix_module
from palaver.knowledge.index.base import Entry, Space
from palaver.knowledge.index.int8_scan import approximate, encode, encode_query
from palaver.knowledge.index.matrix import PREFILTER_ROWS, VectorMatrix

SPACE = Space("test/int8", 64)


def unit_rows(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, count: int, dim: int = SPACE.dim) -> np.ndarray:
    """Rows around 40 centres, as embeddings of texts on a few subjects are."""
    centres = rng.standard_normal((40, dim))
    picked = centres[rng.integers(0, 40, count)]
    return unit_rows(picked + 0.35 * rng.standard_normal((count, dim)))


def loaded(rows: np.ndarray, types: list[str | None] | None = None) -> VectorMatrix:
    matrix = VectorMatrix.sized(SPACE, len(rows))
    kinds = types or [None] * len(rows)
    matrix.extend([Entry(f"v{i}", type=kinds[i]) for i in range(len(rows))], rows)
    return matrix


def exact_top(rows: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None = None):
    scores = rows @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    order = np.lexsort((np.arange(len(rows)), -scores))[:k]
    return [f"v{i}" for i in order], scores[order]


def assert_exact(matrix: VectorMatrix, rows: np.ndarray, query: np.ndarray, k: int, **filters):
    allowed = None
    if "type" in filters:
        allowed = np.array([t == filters["type"] for t in matrix.snapshot().types])
    ids, scores = exact_top(rows, query, k, allowed)
    hits = matrix.snapshot().top(query, k, **filters)
    assert [h.id for h in hits] == ids
    assert np.allclose([h.score for h in hits], scores, atol=1e-6)


@pytest.mark.parametrize("shape", ["random", "clustered"])
def test_a_large_matrix_answers_the_exact_top_k(shape: str) -> None:
    rng = np.random.default_rng(1)
    count = PREFILTER_ROWS + 5_000
    rows = (
        unit_rows(rng.standard_normal((count, SPACE.dim)))
        if shape == "random"
        else clustered(rng, count)
    )
    matrix = loaded(rows)
    for n in range(20):
        query = rows[n * 997] + (0.3 if n % 2 else 0.02) * rng.standard_normal(SPACE.dim)
        query = unit_rows(query[None, :])[0]
        for k in (1, 20):
            assert_exact(matrix, rows, query, k)


def test_rows_nearly_equal_to_the_query_are_ranked_exactly_with_too_few_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hundreds of near-duplicates differ by less than the int8 error: the bounds must pull
    every one that may belong into the exact scoring, even from a single candidate."""
    monkeypatch.setattr(matrix_module, "CANDIDATES", 1)
    rng = np.random.default_rng(2)
    query = unit_rows(rng.standard_normal((1, SPACE.dim)))[0]
    near = unit_rows(query + 0.002 * rng.standard_normal((500, SPACE.dim)))
    rows = np.vstack([clustered(rng, PREFILTER_ROWS), near])
    rng.shuffle(rows)
    assert_exact(loaded(rows), rows, query, 20)


def test_filters_and_writes_keep_the_large_scan_exact() -> None:
    rng = np.random.default_rng(3)
    rows = clustered(rng, PREFILTER_ROWS + 100)
    types: list[str | None] = ["members" if i % 7 == 0 else "owner" for i in range(len(rows))]
    matrix = loaded(rows, types)
    query = unit_rows(rows[11:12] + 0.1 * rng.standard_normal((1, SPACE.dim)))[0]
    assert_exact(matrix, rows, query, 20, type="members")
    replaced = unit_rows(rng.standard_normal((3, SPACE.dim)))
    replaced[0] = query
    matrix.upsert([Entry("v5", type="owner"), Entry("v6"), Entry("v7")], replaced)
    rows = rows.copy()
    rows[5:8] = replaced
    assert matrix.snapshot().top(query, 1)[0].id == "v5"
    assert_exact(matrix, rows, query, 20)
    matrix.remove(["v5"])
    kept = np.delete(rows, 5, axis=0)
    ids = [h.id for h in matrix.snapshot().top(query, 20)]
    scores = kept @ query
    expected = np.lexsort((np.arange(len(kept)), -scores))[:20]
    names = [f"v{i}" for i in range(len(rows)) if i != 5]
    assert ids == [names[i] for i in expected]


def test_the_int8_error_stays_within_its_bound() -> None:
    rng = np.random.default_rng(4)
    rows = clustered(rng, 5_000)
    codes = encode(rows)
    for seed in range(5):
        query = unit_rows(np.random.default_rng(seed).standard_normal((1, SPACE.dim)))[0]
        query_codes, query_scale = encode_query(query)
        error = np.abs(approximate(codes, query_codes, query_scale) - rows @ query)
        bounds = codes.error_bounds(query, query_scale)
        assert np.all(error <= bounds)
        assert np.median(bounds) < 0.05, "a bound this loose would score everything exactly"
