"""A cap on request bodies, so that no JSON body, however large, is read into memory whole.

The upload routes are left alone: they stream to disk under a limit of their own. Which routes
those are goes by path, not by what the request says it carries, so that no one can send a
huge body anywhere else by calling it multipart.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UPLOAD_PATHS = frozenset({"/api/upload", "/api/rag/upload", "/api/channels/import"})
MAX_BODY_BYTES = 8 * 1024 * 1024
"""Room for the longest message or persona the settings allow, several times over."""


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    @property
    def message(self) -> str:
        return f"The request body is larger than the limit of {self.max_bytes} bytes."

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in UPLOAD_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await JSONResponse({"error": self.message}, status_code=413)(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # An HTTPException: FastAPI passes those through its body parsing untouched.
                    raise HTTPException(413, self.message)
            return message

        await self.app(scope, limited, send)
