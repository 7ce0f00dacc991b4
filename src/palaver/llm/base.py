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
    """All input tokens, those served from the provider's cache included."""
    completion_tokens: int
    cached_tokens: int = 0
    """Of `prompt_tokens`, those read from the provider's prompt cache (priced apart)."""


@dataclass(frozen=True)
class Finish:
    """How the answer ended, as the provider said: the model that answered and why it stopped
    (for traces; providers that say neither send none)."""

    model: str | None = None
    reason: str | None = None


Delta = TextDelta | ToolCallDelta | Usage | Finish


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
    """A provider failed. The message is one readable sentence, safe to show to anyone who
    reads the channel (guests too): it names the provider, never its address or key.
    `detail` is the owner's version for the server log, which may say where and why."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


def failure(public: str, detail: str, key: str) -> ProviderError:
    """A ProviderError from two sentence fragments: `public` for the channel, `detail` (with
    the address and the vendor's own words) for the log; a key the vendor quoted is cut out."""
    if key:
        detail = detail.replace(key, "••••")
    return ProviderError(_sentence(public), _sentence(detail))


def status_phrase(status: int) -> str:
    """What an HTTP status from a provider means, in words that quote nothing the vendor said:
    its message may hold part of a key (OpenAI quotes one) or a proxy's internal address."""
    if status == 401:
        return f"refused the key (HTTP {status})"
    if status == 403:
        return f"refused access (HTTP {status})"
    if status == 404:
        return f"does not know the model (HTTP {status})"
    if status == 429:
        return f"is over its rate limit or quota (HTTP {status})"
    if status >= 500:
        return f"failed (HTTP {status})"
    return f"refused the request (HTTP {status})"


def _sentence(text: str) -> str:
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


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
