"""The ModelProvider port: every vendor stream becomes the same small set of deltas."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class ToolCall:
    """A complete tool call requested by the model; `arguments` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    """For role "tool": the id of the call this result answers."""
    name: str | None = None
    """For role "tool": the tool's name (Anthropic and some servers want it)."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of a streamed tool call; fragments with the same index form one call."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


Delta = TextDelta | ToolCallDelta | Usage


@dataclass(frozen=True)
class GenerationOptions:
    max_tokens: int = 1024
    temperature: float | None = None
    timeout: float = 3600.0
    """A cap on top of the provider's own `timeoutSeconds`, for calls that must be quick."""


@dataclass(frozen=True)
class ModelInfo:
    id: str
    """The full model string agents use: "<provider id>/<model name>"."""
    provider: str
    name: str
    label: str = ""


class ProviderError(Exception):
    """A provider failed; the message is one readable sentence, safe to show to users."""


class ModelProvider(Protocol):
    id: str
    context_window: int

    def stream(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        options: GenerationOptions = ...,
    ) -> AsyncIterator[Delta]: ...

    async def complete(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        options: GenerationOptions = ...,
    ) -> str: ...

    async def list_models(self) -> list[ModelInfo]: ...

    async def aclose(self) -> None: ...


@dataclass
class ToolCallAccumulator:
    """Joins streamed tool-call fragments into whole calls, in the order the model began them."""

    _parts: dict[int, list[str]] = field(default_factory=dict)
    _ids: dict[int, str] = field(default_factory=dict)
    _names: dict[int, str] = field(default_factory=dict)

    def add(self, delta: ToolCallDelta) -> None:
        self._parts.setdefault(delta.index, [])
        if delta.id:
            self._ids[delta.index] = delta.id
        if delta.name:
            self._names[delta.index] = self._names.get(delta.index, "") + delta.name
        if delta.arguments:
            self._parts[delta.index].append(delta.arguments)

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(
                id=self._ids.get(i) or f"call_{i}",
                name=self._names.get(i, ""),
                arguments="".join(self._parts[i]),
            )
            for i in sorted(self._parts)
        ]
