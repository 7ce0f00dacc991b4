"""Re-score retrieval candidates with the agent's language model, in one call for all of them.

The model grades each passage from 0 to 10 and answers JSON. Any failure (the provider's, or
an answer that is not a grade for every passage) gives None: re-scoring is an improvement on
fusion order, never a reason for a query to fail.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from palaver.llm.base import ChatMessage, GenerationOptions, ModelProvider, ProviderError

log = logging.getLogger(__name__)

RERANK_DEPTH = 10
PASSAGE_CHARS = 1500

_INSTRUCTIONS = (
    "You grade search results. For each numbered passage, judge how well it answers the "
    "query, from 0 (unrelated) to 10 (answers it directly). Reply with JSON only, no prose: "
    '{"scores": [<grade of passage 0>, <grade of passage 1>, ...]} with exactly one grade per '
    "passage, in passage order."
)
_JSON = re.compile(r"\{.*\}|\[.*\]", re.DOTALL)


class Reranker(Protocol):
    async def grade(self, query: str, passages: Sequence[str]) -> list[float] | None:
        """One relevance grade per passage, higher is better; None when grading failed."""
        ...


@dataclass(frozen=True)
class ModelReranker:
    provider: ModelProvider
    model: str
    """The model name as the provider knows it (without the provider prefix)."""
    options: GenerationOptions = field(
        default_factory=lambda: GenerationOptions(max_tokens=200, temperature=0.0, timeout=60.0)
    )

    async def grade(self, query: str, passages: Sequence[str]) -> list[float] | None:
        if not passages:
            return []
        numbered = "\n\n".join(
            f"[{i}] {' '.join(p.split())[:PASSAGE_CHARS]}" for i, p in enumerate(passages)
        )
        messages = [
            ChatMessage("system", _INSTRUCTIONS),
            ChatMessage("user", f"Query: {query}\n\nPassages:\n\n{numbered}"),
        ]
        try:
            answer = await self.provider.complete(self.model, messages, self.options)
        except (ProviderError, TimeoutError) as exc:
            log.warning("re-scoring failed, keeping fusion order: %s", exc)
            return None
        grades = parse_grades(answer, len(passages))
        if grades is None:
            log.warning("re-scoring answer unusable, keeping fusion order: %.200r", answer)
        return grades


def parse_grades(answer: str, count: int) -> list[float] | None:
    """Accepts {"scores": [...]}, a bare list, or a list of {"index", "score"} objects, inside
    a code fence or not; anything else, or a grade missing for any passage, gives None."""
    found = _JSON.search(answer)
    if found is None:
        return None
    try:
        data: Any = json.loads(found.group(0))
    except ValueError:
        return None
    if isinstance(data, dict):
        data = data.get("scores", data.get("grades"))
    if not isinstance(data, list):
        return None
    if data and all(isinstance(item, dict) for item in data):
        return _indexed(data, count)
    grades = [_number(item) for item in data]
    if len(grades) != count or any(g is None for g in grades):
        return None
    return [g for g in grades if g is not None]


def _indexed(items: list[dict[str, Any]], count: int) -> list[float] | None:
    grades: dict[int, float] = {}
    for item in items:
        index, grade = item.get("index", item.get("id")), _number(item.get("score"))
        if not isinstance(index, int) or isinstance(index, bool) or grade is None:
            return None
        grades[index] = grade
    if sorted(grades) != list(range(count)):
        return None
    return [grades[i] for i in range(count)]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 10.0)
