"""Fake SearXNG, Brave Search and Tavily servers on free loopback ports.

Each answers in its service's JSON format from a background thread and records every
request. Start one with `with FakeSearchServer("brave") as fake:`; point the adapter at
`fake.base_url`; read `fake.requests` (method, path, query, lower-cased headers, JSON body).
Make it misbehave by setting `fake.status` (answer that HTTP status with an error body),
`fake.malformed` (answer 200 with broken JSON) or `fake.delay` (seconds before answering;
a reset or stop ends the wait without an answer); `fake.reset()` clears all of that and the
recorded requests.

Like the real services, SearXNG ignores any count and answers its whole page, Brave honours
`count` and Tavily `max_results`; Brave and Tavily reject a wrong key with 401.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

Kind = Literal["searxng", "brave", "tavily"]

API_KEY = "test-search-key"
PAGE_SIZE = 25


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any = None


@dataclass
class FakeSearchServer:
    kind: Kind
    api_key: str = API_KEY
    status: int | None = None
    malformed: bool = False
    delay: float = 0.0
    requests: list[RecordedRequest] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _release: threading.Event = field(default_factory=threading.Event)
    """Set to let delayed requests go unanswered at once (on reset and stop)."""

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "the fake is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def last(self) -> RecordedRequest:
        return self.requests[-1]

    def reset(self) -> None:
        self._release.set()
        self._release = threading.Event()
        self.status, self.malformed, self.delay = None, False, 0.0
        self.requests.clear()

    def start(self) -> FakeSearchServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeSearchServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def answer(self, request: RecordedRequest) -> tuple[int, Any]:
        """The status and JSON body the real service would send."""
        if self.kind == "searxng":
            return self._searxng(request)
        if self.kind == "brave":
            return self._brave(request)
        return self._tavily(request)

    def _searxng(self, request: RecordedRequest) -> tuple[int, Any]:
        if request.path != "/search":
            return 404, {"error": "not found"}
        if request.query.get("format") != "json":
            return 403, {"error": "format not allowed"}
        query = request.query.get("q", "")
        results = [
            {
                "url": f"https://searx.example/{i}",
                "title": f"SearXNG result {i} for {query}",
                "content": f"Snippet {i} about {query}",
                "engine": "fake",
                "engines": ["fake"],
                "parsed_url": ["https", "searx.example", f"/{i}", "", "", ""],
                "template": "default.html",
                "positions": [i],
                "score": 1.0 / i,
                "category": "general",
            }
            for i in range(1, PAGE_SIZE + 1)
        ]
        return 200, {
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }

    def _brave(self, request: RecordedRequest) -> tuple[int, Any]:
        if request.path != "/res/v1/web/search":
            return 404, {"error": "not found"}
        if request.headers.get("x-subscription-token") != self.api_key:
            return 401, _brave_error(401, "SUBSCRIPTION_TOKEN_INVALID")
        query = request.query.get("q", "")
        count = min(int(request.query.get("count", "20")), 20)
        results = [
            {
                "type": "search_result",
                "title": f"Brave result {i} for <strong>{query}</strong>",
                "url": f"https://brave.example/{i}",
                "description": f"About <strong>{query}</strong> &amp; more, part {i}",
                "is_source_local": False,
                "is_source_both": False,
                "language": "en",
                "family_friendly": True,
            }
            for i in range(1, count + 1)
        ]
        return 200, {
            "type": "search",
            "query": {"original": query, "more_results_available": True},
            "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
            "web": {"type": "search", "results": results, "family_friendly": True},
        }

    def _tavily(self, request: RecordedRequest) -> tuple[int, Any]:
        if request.path != "/search" or request.method != "POST":
            return 404, {"detail": {"error": "Not Found"}}
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
        body = request.body if isinstance(request.body, dict) else {}
        query = str(body.get("query", ""))
        count = int(body.get("max_results", 5))
        results = [
            {
                "title": f"Tavily result {i} for {query}",
                "url": f"https://tavily.example/{i}",
                "content": f"Tavily content {i} on {query}",
                "score": 0.9,
                "raw_content": None,
            }
            for i in range(1, count + 1)
        ]
        return 200, {
            "query": query,
            "answer": None,
            "images": [],
            "follow_up_questions": None,
            "results": results,
            "response_time": 0.42,
        }


def _brave_error(status: int, code: str) -> dict[str, Any]:
    return {
        "type": "ErrorResponse",
        "error": {"id": "fake", "status": status, "code": code, "detail": "Invalid token."},
        "time": 0,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `fake.requests` instead."""

    def _serve(self) -> None:
        self.close_connection = True
        fake: FakeSearchServer = self.server.fake  # type: ignore[attr-defined]
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=self.command,
            path=split.path,
            query=dict(parse_qsl(split.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=json.loads(raw) if raw else None,
        )
        fake.requests.append(request)
        if fake.delay and fake._release.wait(fake.delay):
            return
        if fake.status is not None:
            self._send(fake.status, b'{"error": "the fake was told to fail"}')
        elif fake.malformed:
            self._send(200, b'{"results": [')
        else:
            status, body = fake.answer(request)
            self._send(status, json.dumps(body).encode())

    def _send(self, status: int, payload: bytes) -> None:
        """One answer per connection, so stopping never waits on an idle keep-alive."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
