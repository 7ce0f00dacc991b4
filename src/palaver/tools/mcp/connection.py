"""One configured MCP server: its session, owned by a task of its own, and its restarts.

The SDK's transports are anyio context managers that must be entered and left in the same
task, so each session lives in a long-lived owner task; callers only send requests through
it. A server that fails to start or dies waits out an exponential back-off before the next
use starts it again, and until then its calls fail at once instead of hanging.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from palaver.settings import McpServerConfig
from palaver.tools.base import ToolError
from palaver.tools.mcp.transport import (
    TransportKind,
    config_problem,
    describe_error,
    open_transport,
    preload,
    transport_kind,
)

logger = logging.getLogger(__name__)

State = Literal["idle", "starting", "ready", "backoff", "error"]

_STOP_GRACE_SECONDS = 5.0
"""How long a stopping session may take to leave politely before it is cancelled."""

_MAX_LIST_PAGES = 100
"""A server whose tool listing never ends cannot hold a start-up forever."""

_CLIENT_INFO = mcp_types.Implementation(name="palaver", version="0.1.0")


@dataclass(frozen=True)
class Backoff:
    """Delay before restarting a failed server: `initial`, doubling per failure, up to `maximum`."""

    initial: float = 0.5
    maximum: float = 30.0
    stable_after: float = 60.0
    """A server that stayed up this long counts its next failure as the first again."""

    def delay(self, failures: int) -> float:
        return float(min(self.maximum, self.initial * 2 ** max(0, failures - 1)))


class McpConnection:
    """The session with one server, started on first use and restarted after failures.

    States: `idle` (not started), `starting`, `ready`, `error` (the last start failed, or the
    settings entry is unusable) and `backoff` (a running server died). In `error` and
    `backoff` the next use after the delay tries again; before it, calls raise ToolError.
    """

    def __init__(self, server_id: str, config: McpServerConfig, backoff: Backoff) -> None:
        self.server_id = server_id
        self.config = config
        self.transport: TransportKind = transport_kind(config)
        self.state: State = "idle"
        self.error: str | None = None
        self.tools: list[mcp_types.Tool] = []
        """The tools of the current session, or of the last one while the server is down."""
        self._backoff = backoff
        self._problem = config_problem(config)
        if self._problem is not None:
            self.state, self.error = "error", self._problem
        self._client: Client | None = None
        self._generation = 0
        self._settled = asyncio.Event()
        self._wake = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures = 0
        self._retry_at = 0.0
        self._ready_since = 0.0
        self._stopping = False

    def status(self) -> dict[str, Any]:
        retry_in: float | None = None
        if self.state in ("error", "backoff") and self._problem is None:
            retry_in = round(max(0.0, self._retry_at - _now()), 1)
        return {
            "state": self.state,
            "error": self.error,
            "tools": len(self.tools) if self.state == "ready" else 0,
            "transport": self.transport,
            "retryInSeconds": retry_in,
        }

    async def session(self) -> Client:
        """The ready client, starting the server if it is due; ToolError when unavailable."""
        if self._stopping:
            raise ToolError(f"MCP server '{self.server_id}' has been stopped.")
        if self.state == "ready" and self._client is not None:
            return self._client
        if self.state in ("error", "backoff") and (
            self._problem is not None or _now() < self._retry_at
        ):
            raise ToolError(self._unavailable())
        if self.state != "starting":
            self._launch()
        settled = self._settled
        try:
            async with asyncio.timeout(self.config.timeoutSeconds):
                await settled.wait()
        except TimeoutError:
            raise ToolError(
                f"MCP server '{self.server_id}' did not start within "
                f"{self.config.timeoutSeconds:g} s."
            ) from None
        if self.state == "ready" and self._client is not None:
            return self._client
        raise ToolError(self._unavailable())

    async def call(self, tool: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call one tool, bounded by the server's timeout; every failure becomes ToolError."""
        client = await self.session()
        generation = self._generation
        timeout = self.config.timeoutSeconds
        label = f"MCP tool '{tool}' of server '{self.server_id}'"
        try:
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, args)
        except TimeoutError:
            raise ToolError(f"{label} did not answer within {timeout:g} s.") from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED and self._stopping:
                raise ToolError(f"{label} was interrupted: the server was stopped.") from exc
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._lost(generation, self._gone_reason())
                wait = max(0.0, self._retry_at - _now())
                raise ToolError(
                    f"{label} failed: {self._gone_reason()} during the call; "
                    f"it will be restarted on next use after {wait:.1f} s."
                ) from exc
            raise ToolError(f"{label} was refused: {exc.message}") from exc
        except ValidationError as exc:
            logger.warning("MCP server %s sent a malformed result for %s", self.server_id, tool)
            raise ToolError(f"{label} answered in a form that could not be read.") from exc
        except Exception as exc:
            logger.exception("MCP call to %s on server %s failed", tool, self.server_id)
            raise ToolError(f"{label} failed: {describe_error(exc)}") from exc

    async def aclose(self) -> None:
        """Stop the session and wait until its process or HTTP session is gone."""
        self._stopping = True
        self._wake.set()
        if self.state == "starting" and self._scope is not None:
            self._scope.cancel()
        tasks = [task for task in self._tasks if not task.done()]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=_STOP_GRACE_SECONDS)
        if pending and self._scope is not None:
            logger.warning("MCP server %s is slow to stop; cancelling it", self.server_id)
            self._scope.cancel()
        await asyncio.gather(*tasks)

    def _launch(self) -> None:
        self._generation += 1
        self.state, self.error = "starting", None
        self._settled = asyncio.Event()
        self._wake = asyncio.Event()
        task = asyncio.get_running_loop().create_task(
            self._own(self._generation, self._settled, self._wake),
            name=f"mcp-server:{self.server_id}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _own(self, generation: int, settled: asyncio.Event, wake: asyncio.Event) -> None:
        """The owner task: enter the session, hold it until told to leave or it dies, leave."""
        logger.info("starting MCP server %s (%s)", self.server_id, self.transport)
        failure: str | None = None
        try:
            deadline = anyio.current_time() + self.config.timeoutSeconds
            with anyio.CancelScope(deadline=deadline) as scope:
                self._scope = scope
                await preload()
                async with AsyncExitStack() as stack:
                    transport = open_transport(
                        self.config, lambda: self._lost(generation, self._gone_reason())
                    )
                    client = Client(transport, cache=None, client_info=_CLIENT_INFO)
                    await stack.enter_async_context(client)
                    tools = await _list_tools(client)
                    scope.deadline = math.inf
                    self._became_ready(generation, client, tools)
                    settled.set()
                    await wake.wait()
            if scope.cancelled_caught and not self._stopping:
                failure = f"it did not start within {self.config.timeoutSeconds:g} s"
        except Exception as exc:
            failure = describe_error(exc)
            logger.debug("MCP server %s session ended with an error", self.server_id, exc_info=exc)
        finally:
            self._ended(generation, failure)
            settled.set()

    def _became_ready(self, generation: int, client: Client, tools: list[mcp_types.Tool]) -> None:
        if generation != self._generation:
            return
        self._client, self.tools = client, tools
        self.state, self.error = "ready", None
        self._ready_since = _now()
        logger.info("MCP server %s is ready with %d tools", self.server_id, len(tools))

    def _lost(self, generation: int, reason: str) -> None:
        """The session of `generation` died: back off, and let its owner task leave."""
        if generation != self._generation or self._stopping or self.state != "ready":
            return
        self._fail("backoff", reason)
        self._wake.set()

    def _ended(self, generation: int, failure: str | None) -> None:
        if generation != self._generation:
            return
        self._client, self._scope = None, None
        if self._stopping:
            self.state = "idle"
        elif self.state == "starting":
            self._fail("error", failure or "the server closed the connection during start-up")
        elif self.state == "ready":
            self._fail("backoff", failure or self._gone_reason())

    def _fail(self, state: State, reason: str) -> None:
        now = _now()
        if self.state == "ready" and now - self._ready_since >= self._backoff.stable_after:
            self._failures = 0
        self._failures += 1
        delay = self._backoff.delay(self._failures)
        self._retry_at = now + delay
        self._client = None
        self.state, self.error = state, reason
        logger.warning(
            "MCP server %s is unavailable (%s); next attempt in %.1f s",
            self.server_id,
            reason,
            delay,
        )

    def _gone_reason(self) -> str:
        if self.transport == "stdio":
            return "the server process exited"
        return "the server closed the connection"

    def _unavailable(self) -> str:
        reason = self.error or "it is not running"
        if self._problem is not None:
            return f"MCP server '{self.server_id}' cannot start: {reason}."
        wait = max(0.0, self._retry_at - _now())
        return (
            f"MCP server '{self.server_id}' is unavailable ({reason}); "
            f"it will be tried again in {wait:.1f} s."
        )


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _now() -> float:
    return time.monotonic()
