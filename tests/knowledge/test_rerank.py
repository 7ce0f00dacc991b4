"""Re-scoring: one model call grades every candidate; any failure keeps fusion order."""

from __future__ import annotations

import logging

import pytest

from palaver.knowledge.rerank import ModelReranker, parse_grades
from palaver.llm.base import ProviderError
from palaver.llm.builtin import ECHO, BuiltinProvider
from tests.knowledge.helpers import ScriptedProvider
from tests.support import unique

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


async def test_the_echo_models_ungraded_answer_is_told_once_at_debug_and_only_there_quoted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The default agent's model echoes instead of grading: a normal path, so no WARNING on
    every knowledge query, and the query and passages stay out of the log above DEBUG."""
    reranker = ModelReranker(BuiltinProvider(unique("echo-")), ECHO)
    with caplog.at_level(logging.DEBUG, logger="palaver.knowledge.rerank"):
        for _ in range(3):
            assert await reranker.grade("which animal barks?", PASSAGES) is None
    (record,) = caplog.records
    assert record.levelno == logging.DEBUG
    assert "which animal barks?" in record.getMessage()


async def test_another_models_unusable_answer_is_a_warning_once_without_the_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = ScriptedProvider("The second one: Dogs bark.", id=unique("scripted-"))
    with caplog.at_level(logging.DEBUG, logger="palaver.knowledge.rerank"):
        for _ in range(3):
            assert await ModelReranker(provider, "m").grade("which animal barks?", PASSAGES) is None
    above_debug = [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG]
    assert len(above_debug) == 1 and f"{provider.id}/m" in above_debug[0]
    assert not any(text in above_debug[0] for text in ("barks", *PASSAGES))
