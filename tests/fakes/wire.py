"""The server-sent-event bytes a vendor renderer produces, and the contract renderers meet."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .script import StreamReply


@dataclass(frozen=True)
class SseEvent:
    data: bytes
    """One whole event, blank line included."""
    content: str | None = None
    """The text slice or argument fragment it carries; what cuts and delays count."""
    pause: float = 0.0
    """Seconds to wait before writing it."""


class Renderer(Protocol):
    """How a vendor writes one reply; `body` is the request that asked for it."""

    def stream(self, reply: StreamReply, body: Any) -> list[SseEvent]: ...

    def whole(self, reply: StreamReply, body: Any) -> Any:
        """The JSON of a non-streaming answer."""

    def malformed_event(self) -> bytes: ...

    def error_event(self, message: str) -> bytes: ...


def sse(data: Any, event: str | None = None) -> bytes:
    """One event in the compact JSON the vendors send."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def spaced(events: Sequence[SseEvent], delay: float) -> Iterator[SseEvent]:
    """Put `delay` before every content event but the first."""
    first = True
    for event in events:
        if event.content is not None and not first:
            yield SseEvent(event.data, event.content, delay)
        else:
            yield event
        first = first and event.content is None
