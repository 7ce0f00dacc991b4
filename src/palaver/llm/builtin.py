"""An offline model, so that the service answers out of the box and in demos without a network.

`echo` names the agent and quotes the last user message, streamed word by word. It reads the
agent's name from the first line of the system prompt, which the context builder always
writes as `You are <name>.`, and drops the `<author>: ` prefix that user turns carry.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Sequence

from palaver.llm.base import (
    ChatMessage,
    Delta,
    GenerationOptions,
    ModelInfo,
    ProviderError,
    TextDelta,
    ToolSpec,
    Usage,
)

BUILTIN_ID = "builtin"
ECHO = "echo"
ECHO_LABEL = "Echo (offline demo model)"
CONTEXT_WINDOW = 8192
QUOTE_LIMIT = 200
"""Characters of the user's message quoted back; longer ones are cut with an ellipsis."""
DEFAULT_OPTIONS = GenerationOptions()

_AUTHOR_PREFIX = re.compile(r"[^\n:]{1,80}: ")
_SLICES = re.compile(r"\s*\S+")


class BuiltinProvider:
    def __init__(self, provider_id: str = BUILTIN_ID, *, delay: float = 0.01) -> None:
        self.id = provider_id
        self.context_window = CONTEXT_WINDOW
        self._delay = delay
        """Seconds between slices, so that a demo shows a reply streaming in."""

    async def stream(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> AsyncGenerator[Delta, None]:
        reply = self._reply(model, messages)
        for i, piece in enumerate(_SLICES.findall(reply)):
            if i and self._delay:
                await asyncio.sleep(self._delay)
            yield TextDelta(piece)
        prompt = sum(len(m.content) for m in messages)
        yield Usage(prompt_tokens=_tokens(prompt), completion_tokens=_tokens(len(reply)))

    async def complete(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> str:
        return self._reply(model, messages)

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(f"{self.id}/{ECHO}", self.id, ECHO, ECHO_LABEL)]

    async def aclose(self) -> None:
        """Nothing to release."""

    def _reply(self, model: str, messages: Sequence[ChatMessage]) -> str:
        if model != ECHO:
            raise ProviderError(f"The model provider '{self.id}' has only the model '{ECHO}'.")
        return echo_reply(messages)


def echo_reply(messages: Sequence[ChatMessage]) -> str:
    agent = _agent_name(messages)
    said = next((m.content for m in reversed(messages) if m.role == "user"), "")
    said = " ".join(_without_author(said).split())
    if not said:
        return f"{agent} here, answering offline with the built-in echo model."
    if len(said) > QUOTE_LIMIT:
        said = said[: QUOTE_LIMIT - 1].rstrip() + "…"
    return f'{agent} here (offline echo model). You said: "{said}"'


def _agent_name(messages: Sequence[ChatMessage]) -> str:
    system = next((m.content for m in messages if m.role == "system"), "")
    first = system.strip().split("\n", 1)[0].strip()
    if first.startswith("You are ") and first.endswith(".") and len(first) > len("You are ."):
        return first[len("You are ") : -1].strip() or "Agent"
    return "Agent"


def _without_author(content: str) -> str:
    prefix = _AUTHOR_PREFIX.match(content)
    return content[prefix.end() :] if prefix else content


def _tokens(chars: int) -> int:
    """Four characters a token: near enough for English, and costs nothing."""
    return max(1, -(-chars // 4))
