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
from palaver.llm.builtin import BuiltinProvider

log = logging.getLogger(__name__)

RERANK_DEPTH = 10
PASSAGE_CHARS = 1500
_UNUSABLE_SEEN: set[str] = set()
"""The models whose unusable re-scoring answer was logged already, in this process."""

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
        except ProviderError as exc:
            log.warning("re-scoring failed, keeping fusion order: %s", exc.detail)
            return None
        except TimeoutError:
            log.warning("re-scoring by %s timed out, keeping fusion order", self._name)
            return None
        grades = parse_grades(answer, len(passages))
        if grades is None:
            self._unusable(answer)
        return grades

    @property
    def _name(self) -> str:
        return f"{self.provider.id}/{self.model}"

    def _unusable(self, answer: str) -> None:
        """Said once per model. The built-in echo model never grades, so that is a normal path
        for it (DEBUG); for another model it is worth the owner's notice. The answer may quote
        the query and the passages, so only DEBUG shows it."""
        if self._name in _UNUSABLE_SEEN:
            return
        _UNUSABLE_SEEN.add(self._name)
        if isinstance(self.provider, BuiltinProvider):
            log.debug("%s cannot re-score; fusion order kept: %.200r", self._name, answer)
            return
        log.warning(
            "re-scoring answers of %s are unusable; fusion order kept (told once)", self._name
        )
        log.debug("the unusable answer of %s: %.200r", self._name, answer)


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
