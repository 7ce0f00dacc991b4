"""What every fake model server shares: scripted replies, records, and the stream loop.

Every fake (`FakeOpenAI`, `FakeAnthropic`) offers:
- life cycle: `with Fake() as fake:` or `start()` / `close()`; `url` (the root) and
  `base_url` (what the vendor's SDK wants);
- scripting: `enqueue(*replies)`, `default` (answered when the queue is empty),
  `responder(request) -> Reply | None` (picks per request, before the queue; for many
  concurrent replies), `api_key` (refuse other keys with 401), `release()` (end every hang,
  stall and pause now), `reset()`;
- records: `requests` and `model_requests` (`RecordedRequest`: method, path, query,
  lower-cased headers, parsed JSON body, receive time), `events` and `events_for(request)`
  (`WrittenEvent`: the exact bytes, the text it carries, its write time), and
  `wait_for_requests(n)` for threads that must wait for the model to be asked.

Times are `time.monotonic()`, which on Linux is one clock for every process of the machine,
so a benchmark may compare them with readings taken in another process. A vendor fake
subclasses `FakeModelServer`, routes requests in `route()`, and renders the scripts of
`fakes.script` into its own bytes through a `Renderer`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from .script import (
    DEFAULT_PIECES,
    Broken,
    Hang,
    HttpError,
    KeepAlive,
    Malformed,
    Reply,
    Stall,
    StreamFailure,
    StreamReply,
    Text,
)
from .transport import Aborted, Handler, LoopbackServer
from .wire import Renderer, SseEvent


@dataclass(frozen=True)
class RecordedRequest:
    index: int
    """Position among all requests this fake received, from 0."""
    method: str
    path: str
    """Without the query string."""
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Names lower-cased."""
    body: Any
    """The parsed JSON body, or None when there was none or it was not JSON."""
    raw: bytes
    received_at: float


@dataclass(frozen=True)
class WrittenEvent:
    request: int
    """`RecordedRequest.index` of the request this event answered."""
    seq: int
    """Position of the event within its response, from 0."""
    data: bytes
    content: str | None
    """The text slice or argument fragment the event carries, if any."""
    written_at: float
    """`time.monotonic()` just after the event's bytes were handed to the socket."""


Responder = Callable[[RecordedRequest], Reply | None]


@dataclass
class _State:
    queue: deque[Reply] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    events: list[WrittenEvent] = field(default_factory=list)


class FakeModelServer:
    """Start with `with Fake() as fake:` (or `start()` / `close()`); see the vendor modules."""

    generation_path = ""
    """The path of the endpoint that generates replies; requests to it take from the queue."""

    def __init__(
        self,
        *,
        default: Reply | None = None,
        responder: Responder | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.default: Reply = default or Text(DEFAULT_PIECES)
        self.responder = responder
        """Picks the reply from the request; when it answers None the queue is used."""
        self.api_key = api_key
        """When set, requests without this key are refused with 401, as the vendor would."""
        self._closing = False
        self._host = host
        self._server: LoopbackServer | None = None
        self._state = _State()
        self._changed = threading.Condition()
        self._gate = threading.Event()

    # Life cycle.

    def start(self) -> Self:
        self._closing = False
        self._server = LoopbackServer(self._handle, self._host)
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._closing = True
        self.release()
        server.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The server's root, e.g. http://127.0.0.1:41234."""
        if self._server is None:
            raise RuntimeError("the fake is not running")
        return self._server.url

    # Scripting.

    def enqueue(self, *replies: Reply) -> None:
        """Replies for the next generation requests, in order; then `default` again."""
        with self._changed:
            self._state.queue.extend(replies)

    def release(self) -> None:
        """End every wait in progress: hangs, stalls and the pauses between pieces."""
        with self._changed:
            gate, self._gate = self._gate, threading.Event()
        gate.set()

    def reset(self) -> None:
        """Forget the queue, the recorded requests and the written events."""
        with self._changed:
            self._state = _State()

    # Records.

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._changed:
            return list(self._state.requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The requests to the generation endpoint, oldest first."""
        return [r for r in self.requests if r.path == self.generation_path]

    @property
    def events(self) -> list[WrittenEvent]:
        with self._changed:
            return list(self._state.events)

    def events_for(self, request: RecordedRequest | int) -> list[WrittenEvent]:
        index = request if isinstance(request, int) else request.index
        return [e for e in self.events if e.request == index]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until `count` generation requests have arrived; a thread-side helper."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [r for r in self._state.requests if r.path == self.generation_path]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(found)} of {count} model requests arrived")
                self._changed.wait(left)

    # Serving.

    def route(self, handler: Handler, request: RecordedRequest) -> None:
        raise NotImplementedError

    def authorized(self, request: RecordedRequest) -> bool:
        raise NotImplementedError

    def send_error_reply(self, handler: Handler, error: HttpError) -> None:
        raise NotImplementedError

    def next_reply(self, request: RecordedRequest) -> Reply:
        if self.responder is not None:
            chosen = self.responder(request)
            if chosen is not None:
                return chosen
        with self._changed:
            return self._state.queue.popleft() if self._state.queue else self.default

    def wait(self, seconds: float | None) -> None:
        """Sleep that `release()` and `close()` cut short."""
        with self._changed:
            gate = self._gate
        gate.wait(seconds)
        if self._closing:
            raise Aborted

    def _handle(self, handler: Handler) -> None:
        request = self._record(handler)
        if self.api_key is not None and not self.authorized(request):
            self.send_error_reply(handler, HttpError(401, "Invalid API key."))
        else:
            self.route(handler, request)

    def _record(self, handler: Handler) -> RecordedRequest:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(handler.path)
        with self._changed:
            request = RecordedRequest(
                index=len(self._state.requests),
                method=handler.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in handler.headers.items()},
                body=body,
                raw=raw,
                received_at=time.monotonic(),
            )
            self._state.requests.append(request)
            self._changed.notify_all()
        return request

    def serve_stream(
        self,
        handler: Handler,
        request: RecordedRequest,
        reply: Reply,
        renderer: Renderer,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer a streaming request with `reply`, cuts and hangs included."""
        if isinstance(reply, Hang):
            self.wait(reply.seconds)
            if reply.then is None:
                handler.abort()
            else:
                self.serve_stream(handler, request, reply.then, renderer, headers)
            return
        if isinstance(reply, HttpError):
            self.send_error_reply(handler, reply)
            return
        cut = None if isinstance(reply, StreamReply) else reply
        body = reply if isinstance(reply, StreamReply) else reply.reply
        events = renderer.stream(body, request.body)
        total = sum(e.content is not None for e in events)
        handler.start_events(headers)
        seq = 0
        pieces = 0
        for event in events:
            due = event.content is not None or pieces == total
            if cut is not None and due and pieces == min(cut.after, total):
                extra = self._apply_cut(handler, cut, renderer)
                if extra is not None:
                    self._write_event(handler, request, seq, SseEvent(extra))
                    seq += 1
                    break
                cut = None
            if event.pause:
                self.wait(event.pause)
            self._write_event(handler, request, seq, event)
            seq += 1
            pieces += event.content is not None
        handler.end_events()

    def serve_once(
        self, handler: Handler, request: RecordedRequest, reply: Reply, renderer: Renderer
    ) -> None:
        """Answer a non-streaming request: each cut becomes its nearest one-shot meaning."""
        if isinstance(reply, Hang):
            self.wait(reply.seconds)
            if reply.then is None:
                handler.abort()
            else:
                self.serve_once(handler, request, reply.then, renderer)
        elif isinstance(reply, HttpError):
            self.send_error_reply(handler, reply)
        elif isinstance(reply, Broken):
            handler.abort()
        elif isinstance(reply, Malformed):
            handler.send_bytes(200, b'{"id": "broken", "content": [', "application/json")
        elif isinstance(reply, StreamFailure):
            self.send_error_reply(handler, HttpError(500, reply.message))
        else:
            if isinstance(reply, Stall | KeepAlive):
                self.wait(reply.seconds if isinstance(reply, Stall) else None)
                reply = reply.reply
            handler.send_json(200, renderer.whole(reply, request.body))

    def _apply_cut(self, handler: Handler, cut: Any, renderer: Renderer) -> bytes | None:
        """Do what the cut asks; the bytes returned are written last, before the stream ends."""
        if isinstance(cut, Broken):
            handler.abort()
        if isinstance(cut, Malformed):
            return renderer.malformed_event()
        if isinstance(cut, StreamFailure):
            return renderer.error_event(cut.message)
        if isinstance(cut, KeepAlive):
            with self._changed:
                gate = self._gate
            while not gate.wait(cut.interval):
                handler.write_chunk(b": keep-alive\n\n")
            if self._closing:
                raise Aborted
            return None
        assert isinstance(cut, Stall)
        self.wait(cut.seconds)
        return None

    def _write_event(
        self, handler: Handler, request: RecordedRequest, seq: int, event: SseEvent
    ) -> None:
        handler.write_chunk(event.data)
        written = WrittenEvent(request.index, seq, event.data, event.content, time.monotonic())
        with self._changed:
            self._state.events.append(written)
