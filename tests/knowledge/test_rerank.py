"""Re-scoring: one model call grades every candidate; any failure keeps fusion order."""

from __future__ import annotations

import pytest

from palaver.knowledge.rerank import ModelReranker, parse_grades
from palaver.llm.base import ProviderError
from tests.knowledge.helpers import ScriptedProvider

PASSAGES = ["Cats purr.", "Dogs bark.", "Cows moo."]


async def test_one_call_grades_every_passage() -> None:
    provider = ScriptedProvider('{"scores": [2, 9, 5]}')
    grades = await ModelReranker(provider, "m").grade("which animal barks?", PASSAGES)
    assert grades == [2.0, 9.0, 5.0]
    (call,) = provider.calls
    prompt = call[-1].content
    assert "which animal barks?" in prompt
    assert all(f"[{i}] {p}" in prompt for i, p in enumerate(PASSAGES))
    assert "JSON" in call[0].content


@pytest.mark.parametrize(
    "answer",
    [
        '```json\n{"scores": [1, 10, 4]}\n```',
        "Sure! [1, 10, 4]",
        '[{"index": 2, "score": 4}, {"index": 0, "score": 1}, {"index": 1, "score": 10}]',
        '{"scores": [1, 12, 4]}',
    ],
)
def test_grades_are_read_from_the_usual_answer_shapes(answer: str) -> None:
    assert parse_grades(answer, 3) == [1.0, 10.0, 4.0]


@pytest.mark.parametrize(
    "answer",
    [
        "I think the second one.",
        '{"scores": [1, 2]}',
        '{"scores": [1, "high", 3]}',
        '{"scores": [1, true, 3]}',
        '{"scores": [1, NaN, 3]}',
        '{"verdict": "good"}',
        '[{"index": 0, "score": 1}, {"index": 0, "score": 2}, {"index": 2, "score": 3}]',
        "{not json}",
    ],
)
async def test_unusable_answers_give_none(answer: str) -> None:
    provider = ScriptedProvider(answer)
    assert await ModelReranker(provider, "m").grade("q", PASSAGES) is None


async def test_a_failing_provider_gives_none() -> None:
    provider = ScriptedProvider(ProviderError("The model is unavailable."))
    assert await ModelReranker(provider, "m").grade("q", PASSAGES) is None
    timeout = ScriptedProvider(TimeoutError())
    assert await ModelReranker(timeout, "m").grade("q", PASSAGES) is None


async def test_nothing_to_grade_needs_no_call() -> None:
    provider = ScriptedProvider("unused")
    assert await ModelReranker(provider, "m").grade("q", []) == []
    assert provider.calls == []
