"""Passage-level scoring that survives changes of chunking.

A judgement names a document and quotes a span of it; a retrieved chunk of that document is
relevant to the judgement when it holds the span (compared case-folded, whitespace collapsed),
or, when a chunk boundary cut the span, when it ends with the span's first 60% of words or
starts with its last 60%. Each judgement counts once: a chunk gains the best grade among the
judgements it is the first to hold, so overlapping chunks that repeat a passage earn nothing
the second time.

- nDCG@k: gain 2^grade - 1, discount log2(rank + 1); the ideal ranking is built greedily from
  the corpus's actual chunks, so a perfect ranking scores 1 whatever the chunk size.
- recall@k: the share of a question's judgements (both grades) held by its top k.
- MRR: 1 / rank of the first chunk holding a grade-2 span in the top k, else 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench.quality.corpus import KINDS, Judgement, Question

DEPTH = 10
CUT_SHARE = 0.6


@dataclass(frozen=True)
class Passage:
    document: str
    content: str


@dataclass(frozen=True)
class Scores:
    ndcg: float
    recall: float
    mrr: float


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def holds(content: str, span: str) -> bool:
    """Whether normalized `content` holds normalized `span`, or the part of it that a chunk
    boundary left on this side."""
    if span in content:
        return True
    words = span.split()
    least = math.ceil(len(words) * CUT_SHARE)
    head = content.rstrip(" .,;:")
    tail = content.lstrip(" .,;:")
    for size in range(len(words) - 1, least - 1, -1):
        if head.endswith(" ".join(words[:size])) or tail.startswith(" ".join(words[-size:])):
            return True
    return False


def _held(question: Question, passage: Passage) -> list[int]:
    """Indexes of the question's judgements that the passage holds."""
    content = normalize(passage.content)
    return [
        i
        for i, j in enumerate(question.judgements)
        if j.document == passage.document and holds(content, normalize(j.span))
    ]


def _gains(question: Question, ranked: Iterable[Passage]) -> tuple[list[int], set[int]]:
    credited: set[int] = set()
    gains: list[int] = []
    for passage in ranked:
        new = [i for i in _held(question, passage) if i not in credited]
        credited.update(new)
        gains.append(max((question.judgements[i].grade for i in new), default=0))
    return gains, credited


def _dcg(gains: Sequence[int]) -> float:
    return sum((2.0**g - 1) / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ideal_gains(question: Question, corpus: Sequence[Passage], depth: int = DEPTH) -> list[int]:
    """The best gains any ranking of the corpus's chunks can reach: greedily, the chunk whose
    best not-yet-credited judgement has the highest grade."""
    holders = [(set(h), p) for p in corpus if (h := _held(question, p))]
    credited: set[int] = set()
    gains: list[int] = []
    while holders and len(gains) < depth:
        best_grade, best = 0, -1
        for index, (held, _) in enumerate(holders):
            grade = max((question.judgements[i].grade for i in held - credited), default=0)
            if grade > best_grade:
                best_grade, best = grade, index
        if best < 0:
            break
        credited |= holders.pop(best)[0]
        gains.append(best_grade)
    return gains


def unheld(judgements: Iterable[Judgement], corpus: Sequence[Passage]) -> list[Judgement]:
    """Judgements that no chunk holds: a broken span, or a parser that mangled the text."""
    by_document: dict[str, list[str]] = {}
    for passage in corpus:
        by_document.setdefault(passage.document, []).append(normalize(passage.content))
    return [
        j
        for j in judgements
        if not any(holds(c, normalize(j.span)) for c in by_document.get(j.document, []))
    ]


def score(
    question: Question, ranked: Sequence[Passage], ideal: Sequence[int], depth: int = DEPTH
) -> Scores:
    top = ranked[:depth]
    gains, credited = _gains(question, top)
    best = _dcg(ideal)
    ndcg = _dcg(gains) / best if best > 0 else 0.0
    recall = len(credited) / len(question.judgements)
    first = next(
        (
            rank
            for rank, passage in enumerate(top, start=1)
            if any(question.judgements[i].grade == 2 for i in _held(question, passage))
        ),
        None,
    )
    return Scores(ndcg, recall, 1.0 / first if first else 0.0)


def mean_scores(rows: Sequence[Scores]) -> dict[str, float]:
    if not rows:
        return {"questions": 0}
    return {
        "questions": len(rows),
        "ndcg@10": round(statistics.fmean(r.ndcg for r in rows), 4),
        "recall@10": round(statistics.fmean(r.recall for r in rows), 4),
        "mrr": round(statistics.fmean(r.mrr for r in rows), 4),
    }


def by_kind(questions: Sequence[Question], rows: Sequence[Scores]) -> dict[str, dict[str, float]]:
    """Mean scores per kind of question (kinds without judgements are left out)."""
    return {
        kind: mean_scores([r for q, r in zip(questions, rows, strict=True) if q.kind == kind])
        for kind in KINDS
        if any(q.kind == kind for q in questions)
    }
