"""A scripted fake of the OpenAI API (Chat Completions, models, embeddings) on loopback.

    with FakeOpenAI() as fake:
        fake.enqueue(text("Hel", "lo"), tool_calls(tool_call("add", {"a": 1, "b": 2})))
        client = AsyncOpenAI(base_url=fake.base_url, api_key="x")    # base_url ends in /v1
        ...
        fake.model_requests[-1].body["messages"]                     # what the model was sent

Serves
- POST /v1/chat/completions: streaming (`data: {chunk}` events with `choices[].delta`, tool-call
  fragments carrying index/id/function.name/arguments, a usage chunk with empty `choices` when
  `stream_options.include_usage` is set, then `data: [DONE]`) or one JSON `chat.completion`;
- GET /v1/models: `models` (an `HttpError` in `models_error` answers instead);
- POST /v1/embeddings: unit vectors derived from a hash of each input, `embedding_dim` long
  (or the request's `dimensions`), as floats or base64 as `encoding_format` asks.
Anything else answers 404 in OpenAI's error format.

Replies come from `responder(request)` if set and not None, else the queue (`enqueue`), else
`default`; the scripts are built with the functions of `fakes.script`. Every request is kept
in `requests` (`model_requests` for chat completions only) and every event written in
`events`, with its `time.monotonic()` write time; see `fakes.server`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import struct
import time
from collections.abc import Sequence
from typing import Any

from .script import HttpError, StreamReply, Text, ToolCalls, estimate_tokens
from .server import FakeModelServer, RecordedRequest
from .transport import Handler
from .wire import SseEvent, spaced, sse

_ERROR_TYPES = {
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_ids = itertools.count(1)


def _usage(reply: StreamReply, body: Any) -> dict[str, Any]:
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        prompt = estimate_tokens((body or {}).get("messages", ""))
        completion = len(reply.pieces if isinstance(reply, Text) else reply.text)
        if isinstance(reply, ToolCalls):
            completion += sum(len(c.argument_pieces) for c in reply.calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _call_ids(reply: ToolCalls, completion_id: str) -> list[str]:
    return [c.id or f"call_{completion_id[-8:]}{i}" for i, c in enumerate(reply.calls)]


class OpenAIRenderer:
    """Chat Completions chunks as api.openai.com writes them (compact JSON, one per event)."""

    def stream(self, reply: StreamReply, body: Any) -> list[SseEvent]:
        body = body or {}
        cid = f"chatcmpl-fake{next(_ids):08d}"
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            extra = {"usage": None} if include_usage else {}
            return sse({**base, "choices": [choice], **extra})

        text = reply.pieces if isinstance(reply, Text) else reply.text
        calls = reply.calls if isinstance(reply, ToolCalls) else ()
        role: dict[str, Any] = {"role": "assistant", "content": "", "refusal": None}
        out: list[SseEvent] = []
        if text or not calls:
            out.append(SseEvent(chunk(role)))
        out += [SseEvent(chunk({"content": piece}), piece) for piece in text]
        ids = _call_ids(reply, cid) if isinstance(reply, ToolCalls) else []
        for index, (call, call_id) in enumerate(zip(calls, ids, strict=True)):
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            first = {**role, "content": None} if not text and index == 0 else {}
            out.append(SseEvent(chunk({**first, "tool_calls": [head]})))
            out += [
                SseEvent(chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}), p)
                for p in call.argument_pieces
            ]
        out.append(SseEvent(chunk({}, "tool_calls" if calls else "stop")))
        if include_usage:
            out.append(SseEvent(sse({**base, "choices": [], "usage": _usage(reply, body)})))
        out.append(SseEvent(b"data: [DONE]\n\n"))
        return list(spaced(out, reply.delay))

    def whole(self, reply: StreamReply, body: Any) -> Any:
        return _completion(reply, body)

    def malformed_event(self) -> bytes:
        return b'data: {"id":"chatcmpl-broken","choices":[{"index":0,"delta":{"content":\n\n'

    def error_event(self, message: str) -> bytes:
        return sse({"error": _error_body(500, message, None)["error"]})


def _error_body(status: int, message: str, type: str | None) -> dict[str, Any]:
    default_type, code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {
        "error": {"message": message, "type": type or default_type, "param": None, "code": code}
    }


def _completion(reply: StreamReply, body: Any) -> dict[str, Any]:
    cid = f"chatcmpl-fake{next(_ids):08d}"
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    text = reply.pieces if isinstance(reply, Text) else reply.text
    if text:
        message["content"] = "".join(text)
    if isinstance(reply, ToolCalls):
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c, i in zip(reply.calls, _call_ids(reply, cid), strict=True)
        ]
    finish = "tool_calls" if isinstance(reply, ToolCalls) and reply.calls else "stop"
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": (body or {}).get("model", "fake"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _usage(reply, body),
        "service_tier": "default",
        "system_fingerprint": "fp_fake",
    }


def embed(text: str, dim: int) -> list[float]:
    """A unit vector from a hash of `text`: equal texts, equal vectors; others unrelated."""
    raw = hashlib.shake_256(text.encode()).digest(4 * dim)
    values = [v / 2**31 - 1.0 for v in struct.unpack(f"<{dim}I", raw)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


class FakeOpenAI(FakeModelServer):
    generation_path = "/v1/chat/completions"

    def __init__(
        self,
        *,
        models: Sequence[str] = ("gpt-fake", "gpt-fake-mini"),
        embedding_dim: int = 8,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.models = list(models)
        self.models_error: HttpError | None = None
        self.embedding_dim = embedding_dim
        self.renderer = OpenAIRenderer()

    @property
    def base_url(self) -> str:
        """What the SDK's `base_url` wants: the root plus /v1."""
        return f"{self.url}/v1"

    def authorized(self, request: RecordedRequest) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.api_key}"

    def send_error_reply(self, handler: Handler, error: HttpError) -> None:
        handler.send_json(error.status, _error_body(error.status, error.message, error.type))

    def route(self, handler: Handler, request: RecordedRequest) -> None:
        if request.method == "POST" and request.path == self.generation_path:
            self._chat(handler, request)
        elif request.method == "GET" and request.path == "/v1/models":
            if self.models_error is not None:
                self.send_error_reply(handler, self.models_error)
                return
            data = [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"}
                for m in self.models
            ]
            handler.send_json(200, {"object": "list", "data": data})
        elif request.method == "POST" and request.path == "/v1/embeddings":
            self._embeddings(handler, request)
        else:
            message = f"Invalid URL ({request.method} {request.path})"
            self.send_error_reply(handler, HttpError(404, message, "invalid_request_error"))

    def _chat(self, handler: Handler, request: RecordedRequest) -> None:
        reply = self.next_reply(request)
        if (request.body or {}).get("stream"):
            self.serve_stream(handler, request, reply, self.renderer)
        else:
            self.serve_once(handler, request, reply, self.renderer)

    def _embeddings(self, handler: Handler, request: RecordedRequest) -> None:
        body = request.body or {}
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(i) for i in inputs]
        dim = int(body.get("dimensions") or self.embedding_dim)
        data = []
        for index, value in enumerate(texts):
            vector = embed(value, dim)
            encoded: Any = vector
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(estimate_tokens(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        model = body.get("model", "fake-embedding")
        handler.send_json(200, {"object": "list", "data": data, "model": model, "usage": usage})
