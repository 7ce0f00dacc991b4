"""The Host header check that defeats DNS rebinding.

A page on an attacker's name that resolves to 127.0.0.1 reaches a local Palaver as same-origin
for the browser; only the Host header still says which name it came by. Requests by any name
not allowed answer 400, on HTTP and on the WebSocket upgrade alike.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_WILDCARDS = {"", "0.0.0.0", "::", "[::]"}  # noqa: S104 - names to recognise, not to bind


def host_name(value: str) -> str:
    """The name part of a Host header or authority, lower-cased, port and final dot removed:
    `Example.COM.:8000` is `example.com`, `[::1]:80` is `[::1]`."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    elif value.count(":") > 1:
        return f"[{value}]"
    return value.rstrip(".")


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _port_of(host_header: str, default: int) -> int | None:
    """The port a Host header names; without one, the scheme's default the page used."""
    value = host_header.strip()
    tail = value.rsplit("]", 1)[-1] if value.startswith("[") else value
    if ":" not in tail or tail.count(":") > 1:
        return default
    port = tail.rsplit(":", 1)[1]
    return int(port) if port.isdigit() else None


class AllowedHosts:
    """Which names a request may use: loopback, the listening address when it is one, and
    what the operator adds (`*` for any)."""

    def __init__(self, listen_host: str, extra: Iterable[str]) -> None:
        extra = [item.strip() for item in extra if item.strip()]
        self.any = "*" in extra
        names = set(LOOPBACK_NAMES)
        listen = host_name(listen_host) if ":" not in listen_host else f"[{listen_host}]"
        if listen not in _WILDCARDS:
            names.add(listen)
        names.update(host_name(item) for item in extra if item != "*")
        self.names = frozenset(names)
        self.listens_everywhere = listen_host.strip() in _WILDCARDS or listen in _WILDCARDS

    def allows(self, host_header: str | None) -> bool:
        if self.any:
            return True
        return host_header is not None and host_name(host_header) in self.names

    def allows_origin(self, origin: str, own_host: str | None) -> bool:
        """An Origin is allowed when it is this service as the page reached it: its name an
        allowed host (with `*`, the request's own name) and its port the request's port. Ports
        matter: a cookie is sent to every port of a name, so a page of another local service
        (`http://localhost:3000`) must not open this one's socket."""
        parts = urlsplit(origin)
        if own_host is None or parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False
        name = host_name(parts.netloc)
        if self.any and name != host_name(own_host):
            return False
        if not self.any and name not in self.names:
            return False
        default = _DEFAULT_PORTS[parts.scheme]
        try:
            origin_port = parts.port or default
        except ValueError:
            return False
        return origin_port == _port_of(own_host, default)

    def describe(self) -> str:
        return "any host" if self.any else ", ".join(sorted(self.names))

    def warn_if_open(self) -> None:
        if self.listens_everywhere and not self.any and len(self.names) == len(LOOPBACK_NAMES):
            log.warning(
                "listening on every address, but only requests whose Host is %s are accepted; "
                "set PALAVER_ALLOWED_HOSTS to the names people use to reach this server",
                self.describe(),
            )
        else:
            log.info("requests are accepted for %s", self.describe())


class HostGuard:
    """ASGI middleware: a request by a name that is not allowed answers 400 before routing."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.allowed.any:
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host")
        if self.allowed.allows(host):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {"error": "This server does not answer to that host name (Host header)."},
            status_code=400,
        )
        if scope["type"] == "http":
            await response(scope, receive, send)
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await response(scope, receive, send)
        else:
            await send({"type": "websocket.close", "code": 1008})
