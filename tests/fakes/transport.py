"""The HTTP plumbing under the fakes: a threaded loopback server whose handler writes exact
bytes (one `send` per event, Nagle off) and can drop a connection on purpose."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Aborted(Exception):
    """The connection was dropped on purpose, by the client, or because the fake is closing."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LoopbackServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines."""

    def do_GET(self) -> None:
        try:
            self.server.handle(self)
        except Aborted:
            self.close_connection = True

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
        raise Aborted

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except OSError as exc:
            self.close_connection = True
            raise Aborted from exc


class LoopbackServer(ThreadingHTTPServer):
    """One thread per connection; `close()` wakes and joins them, so no socket outlives it."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    """socketserver's default backlog of 5 resets connections when many replies start at once."""

    def __init__(self, handle: Callable[[Handler], None], host: str) -> None:
        self.handle = handle
        self._live: dict[threading.Thread, socket.socket] = {}
        self._live_lock = threading.Lock()
        super().__init__((host, 0), Handler)
        self._loop = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._loop.start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.shutdown()
        with self._live_lock:
            live = dict(self._live)
        for sock in live.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in live:
            thread.join(timeout=5)
        self.server_close()
        self._loop.join(timeout=5)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection, args=(request, client_address), daemon=True
        )
        with self._live_lock:
            self._live[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._live_lock:
                self._live.pop(threading.current_thread(), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the client dropped is expected; anything else is a bug in the fake."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)
