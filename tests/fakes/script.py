"""What a fake model answers: vendor-neutral scripts that each fake renders in its own protocol.

The same script can be queued on `FakeOpenAI` or `FakeAnthropic`, so a test can run against
both vendors unchanged. Build scripts with the functions below rather than the classes:

    text("Hel", "lo", delay=0.05)                 a reply streamed in these pieces
    burst(1000)                                   1,000 one-character pieces, as fast as possible
    tool_calls(tool_call("add", {"a": 1}), ...)   one or several calls, arguments split in pieces
    http_error(500, "boom")                       an error status before any stream
    broken(text(...), after=2)                    the connection drops after 2 content pieces
    malformed(text(...), after=2)                 an undecodable event after 2 content pieces
    stream_error(text(...), after=2, "Overloaded") a vendor error event after 2 content pieces
    stall(text(...), after=2)                     stops after 2 pieces until released or closed
    hang(seconds=None, then=None)                 says nothing (no status line) for a while
    keep_alive(text(...), after=2)                SSE comments every 0.2 s after 2 pieces, for
                                                  as long as the client listens

A "content piece" is one text slice or one tool-argument fragment; the events that open and
close a message are not counted, so `after=0` fails right after the stream's preamble.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_PIECES = ("Hello", " from", " the", " fake", " model.")


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call; `argument_pieces` are sent as separate fragments, in order."""

    name: str
    argument_pieces: tuple[str, ...]
    id: str | None = None

    @property
    def arguments(self) -> str:
        return "".join(self.argument_pieces)


@dataclass(frozen=True)
class Text:
    pieces: tuple[str, ...]
    delay: float = 0.0
    """Seconds between two pieces (not before the first)."""
    usage: tuple[int, int] | None = None
    """(prompt, completion) tokens to report; estimated when None."""

    @property
    def content(self) -> str:
        return "".join(self.pieces)


@dataclass(frozen=True)
class ToolCalls:
    calls: tuple[ScriptedCall, ...]
    text: tuple[str, ...] = ()
    """Text pieces streamed before the calls."""
    delay: float = 0.0
    usage: tuple[int, int] | None = None


StreamReply = Text | ToolCalls


@dataclass(frozen=True)
class HttpError:
    status: int
    message: str = "The fake model server failed."
    type: str | None = None
    """The vendor's error type; the usual one for `status` when None."""


@dataclass(frozen=True)
class Broken:
    reply: StreamReply
    after: int


@dataclass(frozen=True)
class Malformed:
    reply: StreamReply
    after: int


@dataclass(frozen=True)
class StreamFailure:
    reply: StreamReply
    after: int
    message: str = "Overloaded"


@dataclass(frozen=True)
class Stall:
    reply: StreamReply
    after: int
    seconds: float | None = None
    """None: until `fake.release()` or the fake closes; then the reply goes on."""


@dataclass(frozen=True)
class KeepAlive:
    reply: StreamReply
    after: int
    interval: float = 0.2


@dataclass(frozen=True)
class Hang:
    seconds: float | None = None
    then: Reply | None = None
    """Served after the wait; None closes the connection without an answer."""


Cut = Broken | Malformed | StreamFailure | Stall | KeepAlive
Reply = Text | ToolCalls | HttpError | Broken | Malformed | StreamFailure | Stall | KeepAlive | Hang


def text(*pieces: str, delay: float = 0.0, usage: tuple[int, int] | None = None) -> Text:
    return Text(pieces or DEFAULT_PIECES, delay, usage)


def burst(count: int, char: str = "x") -> Text:
    """`count` one-character tokens, each its own event, written back to back."""
    return Text((char,) * count)


def split(value: str, pieces: int) -> tuple[str, ...]:
    """Cut `value` into `pieces` nearly equal non-empty parts (fewer if it is too short)."""
    pieces = max(1, min(pieces, len(value)))
    size, extra = divmod(len(value), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(value[start:end])
        start = end
    return tuple(out)


def tool_call(
    name: str, arguments: Mapping[str, Any] | str, *, id: str | None = None, pieces: int = 3
) -> ScriptedCall:
    """A call whose JSON arguments arrive split across `pieces` fragments."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ScriptedCall(name, split(raw, pieces) if raw else (), id)


def tool_calls(
    *calls: ScriptedCall,
    text: tuple[str, ...] = (),
    delay: float = 0.0,
    usage: tuple[int, int] | None = None,
) -> ToolCalls:
    return ToolCalls(calls, text, delay, usage)


def http_error(status: int, message: str = HttpError.message, type: str | None = None) -> HttpError:
    return HttpError(status, message, type)


def broken(reply: StreamReply, after: int) -> Broken:
    return Broken(reply, after)


def malformed(reply: StreamReply, after: int) -> Malformed:
    return Malformed(reply, after)


def stream_error(reply: StreamReply, after: int, message: str = "Overloaded") -> StreamFailure:
    return StreamFailure(reply, after, message)


def stall(reply: StreamReply, after: int, seconds: float | None = None) -> Stall:
    return Stall(reply, after, seconds)


def keep_alive(reply: StreamReply, after: int, interval: float = 0.2) -> KeepAlive:
    return KeepAlive(reply, after, interval)


def hang(seconds: float | None = None, then: Reply | None = None) -> Hang:
    return Hang(seconds, then)


def estimate_tokens(value: Any) -> int:
    """A rough count (four characters a token) for replies that script no usage."""
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return max(1, len(raw) // 4)
