"""The fast slice of the hand-judged retrieval quality set (bench/quality/), through a real
server: every fifth document (ten of 48, of every kind), the 76 questions they answer and the
20 that nothing answers.

The slice is uploaded over HTTP and asked through `POST /api/rag/query`; text-only and
vector-only rankings come from the server's index class on the same database after it stops,
and fusing them must give what the HTTP API answered (so the three modes are measured on the
same index). `python -m bench.bench_quality` scores the whole set the same way.
"""

from __future__ import annotations

from typing import Any

import pytest
from bench.bench_quality import collect, evaluate
from bench.quality.corpus import Question, fast_documents, load_questions, source_texts
from bench.quality.run import Rankings
from bench.quality.scoring import DEPTH, holds, normalize, unheld

NDCG_FLOOR = 0.92
"""Measured on this slice: hybrid nDCG@10 0.956 (text 0.931, vector 0.938). The floor sits
0.035 below, about five of the 76 questions dropping their answer from first place to third:
room for ties that fall the other way on another machine, while a change that costs
retrieval a few percent fails."""
RECALL_FLOOR = 0.97
"""Measured: hybrid recall@10 1.0 (all 83 judged spans in the top 10); the floor lets two
drop out."""
CONFIDENTLY_WRONG = 1
"""Unanswerable questions whose best vector match is as close as a typical right answer's:
none of 20 on this slice, one of 20 on the whole set."""


@pytest.fixture(scope="module")
def measured() -> tuple[list[Question], Rankings]:
    questions, rankings, _, _ = collect("float", fast=True)
    return questions, rankings


@pytest.fixture(scope="module")
def scores(measured: tuple[list[Question], Rankings]) -> dict[str, Any]:
    return evaluate(*measured)


def _overall(scores: dict[str, Any], mode: str) -> dict[str, float]:
    overall: dict[str, float] = scores["modes"][mode]["overall"]
    return overall


def test_every_judged_span_quotes_its_own_document_and_no_other() -> None:
    texts = {name: normalize(text) for name, text in source_texts().items()}
    questions = load_questions()
    assert len(questions) >= 250
    for question in questions:
        for judgement in question.judgements:
            span = normalize(judgement.span)
            holders = [name for name, text in texts.items() if holds(text, span)]
            assert holders == [judgement.document], (question.id, judgement.span, holders)


def test_the_fast_slice_has_every_kind_of_document_and_most_kinds_of_question() -> None:
    questions = load_questions(fast=True)
    assert {q.kind for q in questions} >= {"keyword", "paraphrase", "title", "noanswer"}
    assert {j.document for q in questions for j in q.judgements} <= set(fast_documents())
    kinds = {name.rsplit(".", 1)[1] for name in fast_documents()}
    assert kinds == {"txt", "md", "pdf"}
    assert any(name.startswith("note-") for name in fast_documents())


def test_every_judged_span_survives_parsing_and_chunking(
    measured: tuple[list[Question], Rankings],
) -> None:
    questions, rankings = measured
    assert unheld([j for q in questions for j in q.judgements], rankings.corpus) == []


def test_fusing_the_index_rankings_gives_what_the_http_api_answers(
    measured: tuple[list[Question], Rankings],
) -> None:
    _, rankings = measured
    assert rankings.agreement == 1.0
    assert all(len(ids) == DEPTH for ids in rankings.hybrid_ids.values())


def test_hybrid_retrieval_is_at_least_as_good_as_text_or_vectors_alone(
    scores: dict[str, Any],
) -> None:
    hybrid = _overall(scores, "hybrid")["ndcg@10"]
    assert hybrid >= _overall(scores, "text")["ndcg@10"], scores["modes"]
    assert hybrid >= _overall(scores, "vector")["ndcg@10"], scores["modes"]


def test_hybrid_retrieval_quality_stays_above_its_floor(scores: dict[str, Any]) -> None:
    hybrid = _overall(scores, "hybrid")
    assert hybrid["ndcg@10"] >= NDCG_FLOOR, hybrid
    assert hybrid["recall@10"] >= RECALL_FLOOR, hybrid


def test_questions_without_an_answer_rarely_find_anything_that_looks_like_one(
    scores: dict[str, Any],
) -> None:
    unanswerable = scores["no_answer"]
    assert unanswerable["questions"] == 20
    assert unanswerable["confidently_wrong"] <= CONFIDENTLY_WRONG, unanswerable
