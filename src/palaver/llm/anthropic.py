"""The Anthropic Messages adapter, through the official SDK.

Anthropic wants strictly alternating turns: the system prompt goes apart, tool results ride in
a user turn, and consecutive turns of one role are merged into one. `options.temperature` is
not sent: the API version that SDK 2.x speaks refuses every sampling parameter.
`httpcore2` is imported up front for the reason given in `palaver.llm.openai`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import anthropic
import httpcore2  # noqa: F401
import httpx2
from anthropic.types import (
    ContentBlockParam,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
    ToolParam,
)

from palaver.llm.base import (
    ChatMessage,
    Delta,
    Finish,
    GenerationOptions,
    ModelInfo,
    ProviderError,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
    failure,
    status_phrase,
)
from palaver.settings import ProviderConfig

ANTHROPIC_URL = "https://api.anthropic.com"
PLACEHOLDER_KEY = "not-configured"
"""Without a key the SDK would go looking for credentials in the environment and on disk."""
LISTING_TIMEOUT = 15.0
OPENING_TURN = "(The conversation so far begins with your reply.)"
"""Stands in for a missing first user turn, which Anthropic requires."""
DEFAULT_OPTIONS = GenerationOptions()


class AnthropicProvider:
    def __init__(self, provider_id: str, config: ProviderConfig) -> None:
        self.id = provider_id
        self.context_window = config.contextWindow
        self._key = config.apiKey or ""
        self._timeout = config.timeoutSeconds
        base_url = config.baseUrl or ANTHROPIC_URL
        self._where = _endpoint(provider_id, base_url)
        self._client = anthropic.AsyncAnthropic(
            api_key=config.apiKey or PLACEHOLDER_KEY,
            base_url=base_url,
            max_retries=0,
            timeout=config.timeoutSeconds,
        )

    async def stream(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] = (),
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> AsyncGenerator[Delta, None]:
        limit = min(self._timeout, options.timeout)
        system, turns = wire_conversation(messages)
        try:
            events = await self._client.messages.create(
                model=model,
                max_tokens=options.max_tokens,
                messages=turns,
                system=system or anthropic.omit,
                tools=[_wire_tool(t) for t in tools] if tools else anthropic.omit,
                stream=True,
                timeout=limit,
            )
        except anthropic.APIError as exc:
            raise self._failure(exc, limit, started=False) from exc
        reader = _EventReader()
        try:
            async for event in events:
                for delta in reader.read(event):
                    yield delta
        except (anthropic.APIError, httpx2.HTTPError) as exc:
            raise self._failure(exc, limit, started=True) from exc
        except (ValueError, AttributeError, TypeError) as exc:
            raise self._malformed(exc) from exc
        finally:
            await events.close()
        if not reader.finished:
            name = f"the model provider '{self.id}'"
            raise failure(
                f"{name} broke off its answer",
                f"{name} at {self._where} broke off its answer",
                self._key,
            )
        yield Usage(reader.prompt_tokens, reader.completion_tokens, reader.cached_tokens)
        yield Finish(reader.model, reader.stop_reason)

    async def complete(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> str:
        deltas = self.stream(model, messages, (), options)
        return "".join([d.text async for d in deltas if isinstance(d, TextDelta)])

    async def list_models(self) -> list[ModelInfo]:
        limit = min(self._timeout, LISTING_TIMEOUT)
        try:
            found = [m async for m in self._client.models.list(limit=100, timeout=limit)]
        except anthropic.APIError as exc:
            raise self._failure(exc, limit, started=False) from exc
        except ValueError as exc:
            message = f"The model provider '{self.id}' sent a malformed model list."
            raise ProviderError(message) from exc
        return [
            ModelInfo(f"{self.id}/{m.id}", self.id, m.id, m.display_name or m.id) for m in found
        ]

    async def aclose(self) -> None:
        await self._client.close()

    def _failure(
        self, exc: anthropic.APIError | httpx2.HTTPError, timeout: float, *, started: bool
    ) -> ProviderError:
        """For the channel, what happened in the provider's name only; for the log, where.

        The SDK leaves transport errors that happen mid-stream as they are, hence httpx2.
        """
        name = f"the model provider '{self.id}'"
        at = f"{name} at {self._where}"
        if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
            public = f"{name} did not answer within {timeout:g} seconds"
            detail = f"{at} did not answer within {timeout:g} seconds"
        elif isinstance(exc, anthropic.APIConnectionError | httpx2.HTTPError) and started:
            public = f"the connection to {name} broke during the answer"
            detail = f"the connection to {at} broke during the answer: {_cause(exc)}"
        elif isinstance(exc, anthropic.APIConnectionError | httpx2.HTTPError):
            public = f"{name} did not answer"
            detail = f"could not reach {at}: {_cause(exc)}"
        elif isinstance(exc, anthropic.APIStatusError) and not started:
            public = f"{name} {status_phrase(exc.status_code)}"
            reason = _readable(exc.api_message, exc.response.reason_phrase)
            detail = f"{at} answered {exc.status_code}: {reason}"
        elif isinstance(exc, anthropic.APIStatusError):
            public = f"{name} failed during the answer"
            detail = f"{at} failed during the answer: {_readable(exc.api_message, 'error')}"
        else:
            public = f"{name} failed"
            detail = f"{at} failed: {_readable(None, exc.message)}"
        return failure(public, detail, self._key)

    def _malformed(self, exc: Exception) -> ProviderError:
        """The exception's type only: its text may quote the model's answer."""
        public = f"the model provider '{self.id}' sent a malformed answer"
        return failure(public, f"{public} ({self._where}, {type(exc).__name__})", self._key)


def _cause(exc: anthropic.APIError | httpx2.HTTPError) -> str:
    """The transport's reason (refused, unknown host...), which the SDK keeps as the cause."""
    found = exc.__cause__ or exc
    return str(found) or type(found).__name__


def _endpoint(provider_id: str, base_url: str) -> str:
    """Scheme, host and port: enough to say where, and nothing that could hold a secret."""
    try:
        parts = urlsplit(base_url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        parts, port = urlsplit(""), ""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProviderError(
            f"The base URL of the model provider '{provider_id}' should look like "
            "http://host:port/path."
        )
    return f"{parts.scheme}://{parts.hostname}{port}"


def _readable(message: str | None, fallback: str) -> str:
    """The vendor's own message if it sent a readable one, cut to a sane length."""
    if not message or not message.strip() or message.lstrip().startswith("<"):
        message = fallback
    text = " ".join(message.split())
    return text if len(text) <= 300 else text[:299] + "…"


def wire_conversation(messages: Sequence[ChatMessage]) -> tuple[str, list[MessageParam]]:
    """The system prompt, and the turns in the order and shape Anthropic accepts."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []
    for message in messages:
        if message.role == "system":
            continue
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    if turns and turns[0][0] == "assistant":
        turns.insert(0, ("user", [{"type": "text", "text": OPENING_TURN}]))
    wire: list[MessageParam] = []
    for role, blocks in turns:
        # Tool results must open the user turn that answers the calls.
        blocks.sort(key=lambda b: b["type"] != "tool_result")
        if role == "user":
            wire.append({"role": "user", "content": blocks})
        else:
            wire.append({"role": "assistant", "content": blocks})
    return system, wire


def _blocks(message: ChatMessage) -> list[ContentBlockParam]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    blocks: list[ContentBlockParam] = []
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        )
    return blocks


def _input(arguments: str) -> dict[str, object]:
    """Anthropic wants an object; arguments the model garbled are kept, as text, for context."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"raw": arguments}
    return value if isinstance(value, dict) else {"value": value}


def _wire_tool(tool: ToolSpec) -> ToolParam:
    schema = tool.parameters or {"type": "object", "properties": {}}
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


@dataclass
class _EventReader:
    """Turns stream events into deltas; usage counts are cumulative, so only the last matters."""

    finished: bool = False
    model: str | None = None
    stop_reason: str | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0

    def read(self, event: RawMessageStreamEvent) -> list[Delta]:
        if isinstance(event, RawContentBlockDeltaEvent):
            delta = event.delta
            if delta.type == "text_delta" and delta.text:
                return [TextDelta(delta.text)]
            if delta.type == "input_json_delta" and delta.partial_json:
                return [ToolCallDelta(event.index, arguments=delta.partial_json)]
        elif isinstance(event, RawContentBlockStartEvent):
            block = event.content_block
            if block.type == "tool_use":
                return [ToolCallDelta(event.index, id=block.id, name=block.name)]
            if block.type == "text" and block.text:
                return [TextDelta(block.text)]
        elif isinstance(event, RawMessageStartEvent):
            self.model = event.message.model
            usage = event.message.usage
            cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
            self.prompt_tokens = usage.input_tokens + cached
            self.cached_tokens = usage.cache_read_input_tokens or 0
            self.completion_tokens = usage.output_tokens
        elif isinstance(event, RawMessageDeltaEvent):
            if event.usage.input_tokens is not None:
                self.prompt_tokens = event.usage.input_tokens
            self.completion_tokens = event.usage.output_tokens
            self.stop_reason = event.delta.stop_reason or self.stop_reason
        elif isinstance(event, RawMessageStopEvent):
            self.finished = True
        return []
