"""Opening one MCP server's transport (stdio or Streamable HTTP) from its settings entry."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from types import TracebackType
from typing import Literal

import anyio
import anyio.to_thread
import httpx2
from mcp import StdioServerParameters, stdio_client
from mcp.client._transport import ReadStream, TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from palaver.settings import McpServerConfig

TransportKind = Literal["stdio", "http"]

_SSE_READ_SECONDS = 300.0
"""How long the HTTP transport waits on a quiet event stream; calls have their own timeout."""


def transport_kind(config: McpServerConfig) -> TransportKind:
    return "stdio" if config.command else "http"


def config_problem(config: McpServerConfig) -> str | None:
    """Why this entry can never connect, or None; such a server is not retried until edited."""
    if config.command and config.url:
        return "its settings name both a command and a url; keep exactly one"
    if not config.command and not config.url:
        return "its settings name neither a command (stdio) nor a url (Streamable HTTP)"
    if config.url and not config.url.startswith(("http://", "https://")):
        return "its url must start with http:// or https://"
    return None


class _WatchedReadStream:
    """The transport's read stream, reporting its end so a dead server is noticed at once.

    Without it a crash would only show on the next call; with it the server moves to back-off
    as soon as its output closes.
    """

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], on_end: Callable[[], None]
    ) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> object:
        """The SDK reads the sender's context from here when the transport provides one."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def preload() -> None:
    """Import what the SDK loads lazily on first use, in a thread rather than on the loop."""
    await anyio.to_thread.run_sync(importlib.import_module, "jsonschema")


@asynccontextmanager
async def open_transport(
    config: McpServerConfig, on_end: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    """Start or reach the server; `on_end` fires when its stream of messages ends.

    The HTTP client is built in a thread: it reads CA certificates and imports lazily.
    """
    if config.command:
        params = StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env) or None
        )
        async with stdio_client(params) as (read, write):
            yield _WatchedReadStream(read, on_end), write
        return
    assert config.url is not None
    timeout = httpx2.Timeout(config.timeoutSeconds, read=_SSE_READ_SECONDS)
    client = await anyio.to_thread.run_sync(
        partial(httpx2.AsyncClient, headers=dict(config.headers), timeout=timeout)
    )
    async with (
        client as http,
        streamable_http_client(config.url, http_client=http) as (read, write),
    ):
        yield _WatchedReadStream(read, on_end), write


def describe_error(exc: BaseException) -> str:
    """A one-line reason from an exception, looking inside the SDK's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return text or "timed out"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name
