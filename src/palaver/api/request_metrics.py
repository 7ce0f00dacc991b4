"""Every HTTP request into `palaver_http_request_duration_seconds`, by route template.

A pure ASGI middleware, outermost, so that it times what the others answer too (a refused
host, a body too large). The route is read from the scope once routing has set it: its template
(`/api/messages/{message_id}`), never the raw path, so that the series stay few whatever
addresses clients ask for; a request that matched no route counts as `unmatched`.
"""

from __future__ import annotations

from time import perf_counter

from prometheus_client import Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Any other method counts as `other`: a client may send any word there."""


class RequestMetrics:
    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app = app
        self._histogram = histogram
        self._children: dict[tuple[str, str, int], Histogram] = {}
        """The histogram's child per label values, kept here: one dict look-up per request
        instead of prometheus-client's `labels()`, which takes a lock."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = perf_counter()
        status = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            self._observe(scope, status, perf_counter() - started)

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None) or UNMATCHED
        method = scope["method"] if scope["method"] in METHODS else "other"
        key = (method, template, status)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._histogram.labels(method, template, str(status))
        child.observe(seconds)
