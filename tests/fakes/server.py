"""The machinery shared by the fake model servers: a loopback HTTP server in a thread that
records every request, serves scripted replies, and writes server-sent events byte by byte.

A vendor fake subclasses `FakeModelServer`, routes requests in `route()`, and renders the
scripts of `fakes.script` into its own event bytes through `Renderer`.

Timestamps are `time.monotonic()`, which on Linux is one clock for every process of the
machine, so a benchmark may compare them with readings taken in another process.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol, Self
from urllib.parse import parse_qs, urlsplit

from .script import (
    DEFAULT_PIECES,
    Broken,
    Hang,
    HttpError,
    Malformed,
    Reply,
    Stall,
    StreamFailure,
    StreamReply,
    Text,
)


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


@dataclass(frozen=True)
class SseEvent:
    data: bytes
    """One whole event, blank line included."""
    content: str | None = None
    pause: float = 0.0
    """Seconds to wait before writing it."""


class Renderer(Protocol):
    """How a vendor writes one reply; `body` is the request that asked for it."""

    def stream(self, reply: StreamReply, body: Any) -> list[SseEvent]: ...

    def whole(self, reply: StreamReply, body: Any) -> Any:
        """The JSON of a non-streaming answer."""
        ...

    def malformed_event(self) -> bytes: ...

    def error_event(self, message: str) -> bytes: ...


Responder = Callable[[RecordedRequest], Reply | None]


class _Aborted(Exception):
    """The connection was dropped on purpose, by the client, or because the fake is closing."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    do_POST = do_GET
    do_DELETE = do_GET

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self._write(data)

    def start_events(self, headers: dict[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        """One HTTP chunk in one `send`, so that each event leaves at once and alone."""
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_events(self) -> None:
        self._write(b"0\r\n\r\n")

    def abort(self) -> None:
        """Drop the connection mid-answer, as a crashing server or a broken network would."""
        self.close_connection = True
        raise _Aborted

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except OSError as exc:
            self.close_connection = True
            raise _Aborted from exc


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    """socketserver's default backlog of 5 resets connections when many replies start at once."""

    def __init__(self, fake: FakeModelServer, host: str) -> None:
        self.fake = fake
        self.live: dict[threading.Thread, socket.socket] = {}
        self.live_lock = threading.Lock()
        super().__init__((host, 0), Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection, args=(request, client_address), daemon=True
        )
        with self.live_lock:
            self.live[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self.live_lock:
                self.live.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections that the client or the fake dropped are expected, not errors."""
        if not self.fake.closing:
            super().handle_error(request, client_address)


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
        self.closing = False
        self._host = host
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._state = _State()
        self._changed = threading.Condition()
        self._gate = threading.Event()

    # Life cycle.

    def start(self) -> Self:
        self._server = _Server(self, self._host)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self.closing = True
        self.release()
        server.shutdown()
        with server.live_lock:
            live = dict(server.live)
        for sock in live.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in live:
            thread.join(timeout=5)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

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
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

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
        if self.closing:
            raise _Aborted

    def _handle(self, handler: Handler) -> None:
        request = self._record(handler)
        try:
            if self.api_key is not None and not self.authorized(request):
                self.send_error_reply(handler, HttpError(401, "Invalid API key."))
            else:
                self.route(handler, request)
        except _Aborted:
            handler.close_connection = True

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
            if isinstance(reply, Stall):
                self.wait(reply.seconds)
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
