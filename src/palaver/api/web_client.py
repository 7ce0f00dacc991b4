"""The browser client and the API docs, served by the service itself and usable offline.

Every GET outside /api, /ws, /uploads and /metrics answers index.html, so a deep link such as
`/c/<channel>` loads the page and the client's router takes over. The build's file names carry
a content hash, so they are cached for a year; index.html is `no-cache`, so a new version is
picked up at the next load (a logged-in person's copy carries the first screen's data and is not
stored at all: `first_screen.py`). The client's files are read once at start-up: they are a few
hundred kilobytes, and the event loop then never touches the disk for them. Swagger UI's (2 MB)
are read at the first request for the docs, in a worker thread, and kept. Each file is gzipped
when a client that accepts gzip first asks for it, and kept: a tenth of a second for Swagger
UI's, 20 ms for the client's that start-up no longer spends.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import re
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from fastapi import APIRouter, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palaver.api.first_screen import COMPRESS_IN_THREAD, personal_page
from palaver.errors import NotFound, allowed_methods

DIST = Path(__file__).resolve().parent.parent / "web" / "dist"
SWAGGER_UI = Path(__file__).resolve().parent / "swagger_ui"
"""swagger-ui-dist 5.35.0 from npm (Apache-2.0: its LICENSE and NOTICE are beside the files).
To update: `npm pack swagger-ui-dist@VERSION` and copy the same five files from `package/`."""
RESERVED = ("/api/", "/uploads/", "/metrics/")
IMMUTABLE = "public, max-age=31536000, immutable"
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")
_COMPRESSIBLE = (".js", ".css", ".html", ".svg", ".json", ".map", ".txt")

DOCS_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
DOCS_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Palaver API</title>
<link rel="stylesheet" href="/api/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-url="/api/openapi.json"></div>
<script src="/api/docs/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>
"""
DOCS_INIT = """window.ui = SwaggerUIBundle({
  url: document.getElementById("swagger-ui").dataset.url,
  dom_id: "#swagger-ui",
  deepLinking: true,
  withCredentials: true,
});
"""


@dataclass
class Asset:
    body: bytes
    media_type: str
    etag: str
    compressible: bool
    _gzipped: bytes | None = field(default=None, repr=False)

    async def gzipped(self) -> bytes | None:
        """The body gzipped, made when first asked for (off the event loop when large) and
        kept; None where gzip does not pay."""
        if self._gzipped is None and self.compressible:
            body = self.body
            if len(body) > COMPRESS_IN_THREAD:
                packed = await anyio.to_thread.run_sync(_gzip, body)
            else:
                packed = _gzip(body)
            if len(packed) < len(body):
                self._gzipped = packed
            else:
                self.compressible = False
        return self._gzipped


def _gzip(body: bytes) -> bytes:
    return gzip.compress(body, 9, mtime=0)


def _asset(body: bytes, name: str) -> Asset:
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if media_type.startswith("text/") or media_type in ("application/javascript", "image/svg+xml"):
        media_type += "; charset=utf-8"
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    return Asset(body, media_type, etag, compressible=name.endswith(_COMPRESSIBLE))


def _load(folder: Path) -> dict[str, Asset]:
    if not folder.is_dir():
        return {}
    return {
        "/" + path.relative_to(folder).as_posix(): _asset(path.read_bytes(), path.name)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _swagger_assets() -> dict[str, Asset]:
    """Swagger UI's two files, vendored byte for byte from the npm package `swagger-ui-dist`
    (see SWAGGER_UI), so that the docs need neither a CDN nor a Python package of 9 MB."""
    assets = {"/init.js": _asset(DOCS_INIT.encode(), "init.js")}
    for name in ("swagger-ui.css", "swagger-ui-bundle.js"):
        assets["/" + name] = _asset((SWAGGER_UI / name).read_bytes(), name)
    return assets


def page_csp(host: str) -> str:
    """No inline script, nothing from another host; the socket is named for older browsers
    that do not count ws: as 'self'."""
    sockets = f" ws://{host} wss://{host}" if _HOST.match(host) else ""
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        f"font-src 'self'; connect-src 'self'{sockets}; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


async def _serve(
    request: Request,
    asset: Asset,
    cache: str,
    csp: str | None = None,
    vary: str = "Accept-Encoding",
) -> Response:
    headers = {"Cache-Control": cache, "ETag": asset.etag, "Vary": vary}
    if csp is not None:
        headers["Content-Security-Policy"] = csp
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    body = asset.body
    if "gzip" in request.headers.get("accept-encoding", ""):
        packed = await asset.gzipped()
        if packed is not None:
            body = packed
            headers["Content-Encoding"] = "gzip"
    return Response(body, headers=headers, media_type=asset.media_type)


def build_router(dist: Path = DIST) -> APIRouter:
    """Read the client build now (at start-up, off the event loop), the docs' assets when
    first asked for."""
    files = _load(dist)
    docs: dict[str, Asset] = {}
    loading = anyio.Lock()
    docs_page = _asset(DOCS_HTML.encode(), "docs.html")
    missing = _asset(
        b"<!doctype html><title>Palaver</title><p>The web client is not built: "
        b"run <code>npm ci &amp;&amp; npm run build</code> in web/.</p>",
        "index.html",
    )
    index = files.get("/index.html", missing)
    router = APIRouter(include_in_schema=False)

    @router.api_route("/api/docs", methods=["GET", "HEAD"])
    async def api_docs(request: Request) -> Response:
        return await _serve(request, docs_page, "no-cache", DOCS_CSP)

    @router.api_route("/api/docs/{name}", methods=["GET", "HEAD"])
    async def api_docs_asset(name: str, request: Request) -> Response:
        if not docs:
            async with loading:
                if not docs:
                    docs.update(await anyio.to_thread.run_sync(_swagger_assets))
        asset = docs.get("/" + name)
        if asset is None:
            raise NotFound("There is nothing at this address.")
        return await _serve(request, asset, "public, max-age=86400")

    @router.api_route("/{path:path}", methods=["GET", "HEAD"])
    async def page(path: str, request: Request) -> Response:
        url_path = "/" + path
        if _reserved(url_path):
            if allowed_methods(request.app, request):
                raise StarletteHTTPException(405)
            raise NotFound("There is nothing at this address.")
        asset = files.get(url_path)
        if asset is not None and url_path != "/index.html":
            hashed = url_path.startswith("/assets/")
            return await _serve(request, asset, IMMUTABLE if hashed else "public, max-age=3600")
        csp = page_csp(request.headers.get("host", ""))
        personal = await personal_page(request, index.body, csp)
        if personal is not None:
            return personal
        # The same address answers a logged-in person with its own copy: a cache keys on both.
        return await _serve(request, index, "no-cache", csp, vary="Accept-Encoding, Cookie")

    return router


def _reserved(url_path: str) -> bool:
    return url_path.startswith(RESERVED) or url_path in ("/api", "/ws", "/uploads", "/metrics")


class ClientPages(BaseRoute):
    """The client's route (`page`), asked first for a path outside /api, /ws, /uploads and
    /metrics: no other route answers one, and FastAPI would build every router's routes to
    find that out (`DeferredRoute`, a tenth of a second on the first page after a start). The
    same route stays last for the reserved paths nothing else takes (a 404 or a 405)."""

    def __init__(self, router: APIRouter) -> None:
        self.route = next(r for r in router.routes if getattr(r, "path", None) == "/{path:path}")

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = self.route.matches(scope)
        if match is Match.NONE or _reserved("/" + child["path_params"]["path"]):
            return Match.NONE, {}
        return match, child

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.route.handle(scope, receive, send)


SECURITY_HEADERS = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"))


def with_security_headers(message: Message) -> Message:
    """A response's start with `SECURITY_HEADERS` added where it does not set them itself."""
    if message["type"] == "http.response.start":
        headers = list(message.get("headers", []))
        present = {name.lower() for name, _ in headers}
        headers += [(name, value) for name, value in SECURITY_HEADERS if name not in present]
        message["headers"] = headers
    return message


class SecurityHeaders:
    """`nosniff` and a same-origin referrer on every HTTP answer, API and uploads included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            await send(with_security_headers(message))

        await self.app(scope, receive, send_with_headers)
