"""The OpenAI Chat Completions adapter: one protocol for OpenAI and the servers that copy it
(Ollama's /v1, vLLM, llama.cpp, LM Studio, OpenRouter), through the official SDK.

`httpcore2` is imported up front because the SDK's first client imports it, and that import
runs a subprocess (trio looking for libpthread) that must not block the event loop.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpcore2  # noqa: F401
import openai
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
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

OPENAI_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "not-needed"
"""Local servers take any key, but the SDK refuses to start without one."""
LISTING_TIMEOUT = 15.0
"""A models page should not wait as long as a generation may."""
DEFAULT_OPTIONS = GenerationOptions()


class OpenAIProvider:
    def __init__(self, provider_id: str, config: ProviderConfig) -> None:
        self.id = provider_id
        self.context_window = config.contextWindow
        self._key = config.apiKey or ""
        self._timeout = config.timeoutSeconds
        base_url = config.baseUrl or OPENAI_URL
        self._where = _endpoint(provider_id, base_url)
        self._official = self._where == OPENAI_URL.removesuffix("/v1")
        self._client = openai.AsyncOpenAI(
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
        try:
            raw = await self._client.chat.completions.with_raw_response.create(
                model=model,
                messages=[_wire_message(m) for m in messages],
                tools=[_wire_tool(t) for t in tools] if tools else openai.omit,
                stream=True,
                stream_options={"include_usage": True},
                temperature=options.temperature if options.temperature is not None else openai.omit,
                # OpenAI's newer models refuse `max_tokens`; most compatible servers only know it.
                max_completion_tokens=options.max_tokens if self._official else openai.omit,
                max_tokens=openai.omit if self._official else options.max_tokens,
                timeout=limit,
            )
        except openai.APIError as exc:
            raise self._failure(exc, limit, started=False) from exc
        # Plain dicts: building the SDK's typed chunks costs more than the rest of the path.
        chunks = raw.parse(to=openai.AsyncStream[object])
        reader = _ChunkReader()
        try:
            async for chunk in chunks:
                for delta in reader.read(chunk):
                    yield delta
        except openai.APIError as exc:
            raise self._failure(exc, limit, started=True) from exc
        except (ValueError, AttributeError, TypeError) as exc:
            raise self._malformed(exc) from exc
        finally:
            await chunks.close()
        if not reader.finished:
            name = f"the model provider '{self.id}'"
            raise failure(
                f"{name} broke off its answer",
                f"{name} at {self._where} broke off its answer",
                self._key,
            )
        if reader.usage is not None:
            yield reader.usage
        yield Finish(reader.model, reader.finish_reason)

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
            names = sorted({m.id async for m in self._client.models.list(timeout=limit)})
        except openai.APIError as exc:
            raise self._failure(exc, limit, started=False) from exc
        except ValueError as exc:
            raise ProviderError(
                f"The model provider '{self.id}' sent a malformed model list."
            ) from exc
        return [ModelInfo(f"{self.id}/{n}", self.id, n, n) for n in names]

    async def aclose(self) -> None:
        await self._client.close()

    def _failure(self, exc: openai.APIError, timeout: float, *, started: bool) -> ProviderError:
        """For the channel, what happened in the provider's name only; for the log, where."""
        name = f"the model provider '{self.id}'"
        at = f"{name} at {self._where}"
        if isinstance(exc, openai.APITimeoutError):
            public = f"{name} did not answer within {timeout:g} seconds"
            detail = f"{at} did not answer within {timeout:g} seconds"
        elif isinstance(exc, openai.APIConnectionError) and started:
            public = f"the connection to {name} broke during the answer"
            detail = f"the connection to {at} broke during the answer: {_cause(exc)}"
        elif isinstance(exc, openai.APIConnectionError):
            public = f"{name} did not answer"
            detail = f"could not reach {at}: {_cause(exc)}"
        elif isinstance(exc, openai.APIStatusError):
            public = f"{name} {status_phrase(exc.status_code)}"
            reason = _detail(exc.body, exc.response.reason_phrase)
            detail = f"{at} answered {exc.status_code}: {reason}"
        else:
            public = f"{name} failed during the answer"
            detail = f"{at} failed during the answer: {_detail(exc.body, exc.message)}"
        return failure(public, detail, self._key)

    def _malformed(self, exc: Exception) -> ProviderError:
        """The exception's type only: its text may quote the model's answer."""
        public = f"the model provider '{self.id}' sent a malformed answer"
        return failure(public, f"{public} ({self._where}, {type(exc).__name__})", self._key)


def _cause(exc: openai.APIError) -> str:
    """The transport's reason (refused, unknown host...), which the SDK keeps as the cause."""
    found = exc.__cause__ or exc
    return str(found) or type(found).__name__


def _detail(body: object, fallback: str) -> str:
    """The vendor's own message if it sent a readable one, cut to a sane length."""
    message: object = body.get("message") if isinstance(body, dict) else body
    if not isinstance(message, str) or not message.strip() or message.lstrip().startswith("<"):
        message = fallback
    text = " ".join(str(message).split())
    return text if len(text) <= 300 else text[:299] + "…"


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


def _wire_message(message: ChatMessage) -> ChatCompletionMessageParam:
    if message.role == "assistant":
        wire = ChatCompletionAssistantMessageParam(
            role="assistant", content=message.content or (None if message.tool_calls else "")
        )
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        return wire
    if message.role == "tool":
        return ChatCompletionToolMessageParam(
            role="tool", tool_call_id=message.tool_call_id or "", content=message.content
        )
    if message.role == "system":
        return {"role": "system", "content": message.content}
    return {"role": "user", "content": message.content}


def _wire_tool(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


@dataclass
class _ChunkReader:
    """Turns chunks into deltas and notes whether the answer came to a proper end.

    Some compatible servers number every parallel call 0 and tell them apart only by id, so a
    new id on a known index opens a new call rather than appending to the old one.
    """

    finished: bool = False
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None
    _slots: dict[int, int] = field(default_factory=dict)
    _ids: dict[int, str] = field(default_factory=dict)
    _opened: int = 0

    def read(self, chunk: object) -> list[Delta]:
        """Raises ValueError, AttributeError or TypeError for a chunk of the wrong shape."""
        if not isinstance(chunk, dict):
            raise ValueError("a chunk is not an object")
        usage = chunk.get("usage")
        if usage:
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            details = usage.get("prompt_tokens_details") or {}
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.usage = Usage(int(prompt or 0), int(completion or 0), int(cached or 0))
        if self.model is None and isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        out: list[Delta] = []
        for choice in (chunk.get("choices") or [])[:1]:
            if choice.get("finish_reason") is not None:
                self.finished = True
                self.finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                out.append(TextDelta(str(content)))
            for position, call in enumerate(delta.get("tool_calls") or ()):
                function = call.get("function") or {}
                out.append(
                    ToolCallDelta(
                        index=self._slot(call.get("index"), position, call.get("id")),
                        id=call.get("id"),
                        name=function.get("name"),
                        arguments=function.get("arguments") or "",
                    )
                )
        return out

    def _slot(self, wire: Any, position: int, call_id: str | None) -> int:
        key = wire if isinstance(wire, int) else position
        known = self._slots.get(key)
        if known is None or (call_id and self._ids.get(key, call_id) != call_id):
            known = self._opened
            self._opened += 1
            self._slots[key] = known
        if call_id:
            self._ids[key] = call_id
        return known
