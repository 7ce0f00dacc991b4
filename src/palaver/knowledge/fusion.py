"""Reciprocal rank fusion of the text and vector result lists (SPEC 8, item 3).

RRF needs only ranks, so BM25 scores and cosine similarities, which share no scale, never
have to be compared. An item found by both searches outranks one found by a single search
at a similar place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RRF_K = 60
DEPTH = 20
"""How many results each search contributes."""


@dataclass(frozen=True)
class Fused:
    id: str
    score: float
    text_rank: int | None
    """1-based place in the text results; None when text search did not return it."""
    vector_rank: int | None


def fuse(text_ids: Sequence[str], vector_ids: Sequence[str], k: int = RRF_K) -> list[Fused]:
    """score = Σ 1/(k + rank) over the lists that hold the item, ranks counted from 1; ties go
    to the item with the better single rank, then to text search's order."""
    text_ranks = {item: rank for rank, item in enumerate(text_ids, start=1)}
    vector_ranks = {item: rank for rank, item in enumerate(vector_ids, start=1)}
    fused = []
    for item in dict.fromkeys([*text_ids, *vector_ids]):
        text_rank, vector_rank = text_ranks.get(item), vector_ranks.get(item)
        score = sum(1.0 / (k + rank) for rank in (text_rank, vector_rank) if rank is not None)
        fused.append(Fused(item, score, text_rank, vector_rank))
    return sorted(
        fused,
        key=lambda f: (
            -f.score,
            min(r for r in (f.text_rank, f.vector_rank) if r is not None),
            f.text_rank is None,
        ),
    )
