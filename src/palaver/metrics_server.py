"""The listener of `PALAVER_METRICS_ADDRESS`: `GET /metrics` and nothing else.

It is prometheus-client's own WSGI app on a small threaded HTTP server, on threads of its own
rather than on the event loop: a scrape renders every series (CPU the loop need not spend), the
metrics still answer while the loop is stuck (when they are wanted most), and the values it
reads are prometheus-client's, which take their own locks, or plain sizes (`len`) of the state
the loop keeps. It starts and stops with the app (its lifespan).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import anyio
from prometheus_client import CollectorRegistry, make_wsgi_app

log = logging.getLogger(__name__)

PATH = "/metrics"
POLL_SECONDS = 0.1
"""How often the server's thread looks whether it should stop."""

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class MetricsUnavailable(RuntimeError):
    """`PALAVER_METRICS_ADDRESS` cannot be listened on."""


def only_metrics(registry: CollectorRegistry) -> WsgiApp:
    """prometheus-client's app answers every path; this address answers `/metrics` only."""
    serve: WsgiApp = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == PATH:
            return serve(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"Not found: this address serves /metrics only.\n"]

    return app


class _Quiet(WSGIRequestHandler):
    """No access line per scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False

    def server_bind(self) -> None:
        """As `WSGIServer.server_bind`, without its reverse lookup of the host's name (which
        can wait for DNS)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)
        self.setup_environ()


def _family(host: str, port: int) -> socket.AddressFamily:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    return infos[0][0]


def _bind(host: str, port: int, app: WsgiApp) -> _Server:
    try:
        family = _family(host, port)
        server_class = type("_MetricsServer", (_Server,), {"address_family": family})
        server: _Server = server_class((host, port), _Quiet)
    except OSError as exc:
        raise MetricsUnavailable(
            f"PALAVER_METRICS_ADDRESS {_shown(host, port)} cannot be listened on: "
            f"{exc.strerror or exc}"
        ) from None
    server.set_app(app)
    return server


def unavailable(host: str, port: int) -> str | None:
    """Why `host:port` cannot be listened on, or None: for `palaver serve` to say so before
    it starts anything (the app binds it again at its start)."""
    try:
        _bind(host, port, only_metrics(CollectorRegistry())).server_close()
    except MetricsUnavailable as exc:
        return str(exc)
    return None


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._app = only_metrics(registry)
        self._host = host
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{_shown(str(host), int(port))}{PATH}"

    async def start(self) -> None:
        """Bind (MetricsUnavailable if that fails) and serve on a thread of its own."""
        server = self._server = await anyio.to_thread.run_sync(
            _bind, self._host, self._port, self._app
        )
        self._thread = threading.Thread(
            target=server.serve_forever,
            args=(POLL_SECONDS,),
            name="palaver-metrics",
            daemon=True,
        )
        self._thread.start()
        log.info("metrics are served at %s", self.url)

    async def aclose(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return

        def stop() -> None:
            server.shutdown()
            server.server_close()

        await anyio.to_thread.run_sync(stop)
        if self._thread is not None:
            await anyio.to_thread.run_sync(self._thread.join)
            self._thread = None
