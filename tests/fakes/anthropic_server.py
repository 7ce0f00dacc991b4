"""A scripted fake of the Anthropic Messages API on loopback.

    with FakeAnthropic() as fake:
        fake.enqueue(text("Hel", "lo"), tool_calls(tool_call("add", {"a": 1, "b": 2})))
        client = AsyncAnthropic(base_url=fake.base_url, api_key="x")  # the root, no /v1
        ...
        fake.model_requests[-1].body["system"]                        # what the model was sent

Serves
- POST /v1/messages: streaming (`event: message_start`, then per content block
  `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`, the first
  one empty as the API does) / `content_block_stop`, a `ping` after the first block starts,
  `message_delta` with `stop_reason` and usage, `message_stop`) or one JSON message;
- GET /v1/models: `models`, as (id, display name) pairs (`models_error` answers instead).
Anything else answers 404 in Anthropic's error format.

Replies come from `responder(request)` if set and not None, else the queue (`enqueue`), else
`default`; the scripts are built with the functions of `fakes.script`. Every request is kept
in `requests` (`model_requests` for /v1/messages only) and every event written in `events`,
with its `time.monotonic()` write time; see `fakes.server`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from .script import HttpError, StreamReply, Text, ToolCalls, estimate_tokens
from .server import FakeModelServer, RecordedRequest
from .transport import Handler
from .wire import SseEvent, spaced, sse

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_ids = itertools.count(1)


def _error_body(status: int, message: str, type: str | None) -> dict[str, Any]:
    kind = type or _ERROR_TYPES.get(status, "api_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": f"req_fake{next(_ids):08d}",
    }


def _text_of(reply: StreamReply) -> tuple[str, ...]:
    return reply.pieces if isinstance(reply, Text) else reply.text


def _calls(reply: StreamReply) -> list[tuple[str, str, tuple[str, ...]]]:
    if not isinstance(reply, ToolCalls):
        return []
    return [(c.id or f"toolu_fake{next(_ids):08d}", c.name, c.argument_pieces) for c in reply.calls]


def _usage(reply: StreamReply, body: Any) -> tuple[int, int]:
    if reply.usage is not None:
        return reply.usage
    body = body or {}
    prompt = estimate_tokens([body.get("system", ""), body.get("messages", [])])
    pieces = len(_text_of(reply))
    if isinstance(reply, ToolCalls):
        pieces += sum(len(c.argument_pieces) for c in reply.calls)
    return prompt, max(1, pieces)


def _message(body: Any, content: list[Any], stop: str | None, usage: tuple[int, int]) -> Any:
    return {
        "id": f"msg_fake{next(_ids):08d}",
        "type": "message",
        "role": "assistant",
        "model": (body or {}).get("model", "fake"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage[0],
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": usage[1],
            "service_tier": "standard",
        },
    }


class AnthropicRenderer:
    """Message stream events as api.anthropic.com writes them."""

    def stream(self, reply: StreamReply, body: Any) -> list[SseEvent]:
        prompt, completion = _usage(reply, body)
        calls = _calls(reply)
        start = _message(body, [], None, (prompt, 1))
        out = [SseEvent(sse({"type": "message_start", "message": start}, "message_start"))]
        blocks: list[tuple[dict[str, Any], list[tuple[dict[str, Any], str]]]] = []
        text = _text_of(reply)
        if text or not calls:
            deltas = [({"type": "text_delta", "text": p}, p) for p in text]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for call_id, name, pieces in calls:
            head = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            deltas = [({"type": "input_json_delta", "partial_json": ""}, "")]
            deltas += [({"type": "input_json_delta", "partial_json": p}, p) for p in pieces]
            blocks.append((head, deltas))
        for index, (head, deltas) in enumerate(blocks):
            opened = {"type": "content_block_start", "index": index, "content_block": head}
            out.append(SseEvent(sse(opened, "content_block_start")))
            if index == 0:
                out.append(SseEvent(b'event: ping\ndata: {"type": "ping"}\n\n'))
            for delta, content in deltas:
                event = {"type": "content_block_delta", "index": index, "delta": delta}
                out.append(SseEvent(sse(event, "content_block_delta"), content or None))
            stopped = {"type": "content_block_stop", "index": index}
            out.append(SseEvent(sse(stopped, "content_block_stop")))
        finished = {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": completion},
        }
        out.append(SseEvent(sse(finished, "message_delta")))
        out.append(SseEvent(sse({"type": "message_stop"}, "message_stop")))
        return list(spaced(out, reply.delay))

    def whole(self, reply: StreamReply, body: Any) -> Any:
        content: list[Any] = []
        if _text_of(reply):
            content.append({"type": "text", "text": "".join(_text_of(reply))})
        for call_id, name, pieces in _calls(reply):
            arguments = json.loads("".join(pieces) or "{}")
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
        stop = "tool_use" if isinstance(reply, ToolCalls) and reply.calls else "end_turn"
        return _message(body, content, stop, _usage(reply, body))

    def malformed_event(self) -> bytes:
        return b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,\n\n'

    def error_event(self, message: str) -> bytes:
        error = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
        return sse(error, "error")


class FakeAnthropic(FakeModelServer):
    generation_path = "/v1/messages"

    def __init__(
        self,
        *,
        models: Sequence[tuple[str, str]] = (
            ("claude-fake-1", "Claude Fake 1"),
            ("claude-fake-2", "Claude Fake 2"),
        ),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.models = list(models)
        self.models_error: HttpError | None = None
        self.renderer = AnthropicRenderer()

    @property
    def base_url(self) -> str:
        """What the SDK's `base_url` wants: the root (it adds /v1 itself)."""
        return self.url

    def authorized(self, request: RecordedRequest) -> bool:
        """The API takes the key in `x-api-key` or, as SDK 2.x sends it, as a bearer token."""
        bearer = request.headers.get("authorization") == f"Bearer {self.api_key}"
        return bearer or request.headers.get("x-api-key") == self.api_key

    def send_error_reply(self, handler: Handler, error: HttpError) -> None:
        body = _error_body(error.status, error.message, error.type)
        handler.send_json(error.status, body, {"request-id": body["request_id"]})

    def route(self, handler: Handler, request: RecordedRequest) -> None:
        if request.method == "POST" and request.path == self.generation_path:
            reply = self.next_reply(request)
            if (request.body or {}).get("stream"):
                headers = {"request-id": f"req_fake{next(_ids):08d}"}
                self.serve_stream(handler, request, reply, self.renderer, headers)
            else:
                self.serve_once(handler, request, reply, self.renderer)
        elif request.method == "GET" and request.path == "/v1/models":
            if self.models_error is not None:
                self.send_error_reply(handler, self.models_error)
                return
            data = [
                {
                    "type": "model",
                    "id": model_id,
                    "display_name": name,
                    "created_at": "2025-01-01T00:00:00Z",
                    "lifecycle": "active",
                }
                for model_id, name in self.models
            ]
            first = data[0]["id"] if data else None
            last = data[-1]["id"] if data else None
            page = {"data": data, "has_more": False, "first_id": first, "last_id": last}
            handler.send_json(200, page)
        else:
            message = f"Not found: {request.method} {request.path}"
            self.send_error_reply(handler, HttpError(404, message))
