"""A real MCP server built with the official SDK, for testing the bridge end to end.

Tools: `add(a, b)` works; `fail(reason)` always fails; `sleep(seconds)` hangs as long as
asked; `pid()` answers the server's process id; `env(name)` and `header(name)` echo an
environment variable and an HTTP request header; `crash()` ends the process at once with
`os._exit`, which is how a test kills the server mid-session.

Over stdio: `python tests/fakes/mcp_server.py` (`stdio_command()` gives the command).
Over Streamable HTTP: `python tests/fakes/mcp_server.py --http` binds a free loopback port,
prints `PORT <n>` and serves `/mcp`; `serve_http()` runs that in a subprocess and yields the
URL and the process, so a test can also kill it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

if TYPE_CHECKING:  # run as a script, this file cannot import the tests package
    from tests.support import Api

SCRIPT = os.path.abspath(__file__)


def build_server() -> MCPServer:
    """The server with its tools; built only in the server process (MCPServer sets up logging)."""
    server: MCPServer = MCPServer("palaver-fake", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(reason: str = "this tool always fails") -> str:
        """Always fails, with the given reason."""
        raise ToolError(reason)

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait the given number of seconds, then answer."""
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def env(name: str) -> str:
        """The value of an environment variable in the server process ('' if unset)."""
        return os.environ.get(name, "")

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP request header ('' if unset or over stdio)."""
        return (ctx.headers or {}).get(name.lower(), "")

    @server.tool()
    def crash() -> str:
        """End the server process at once, without answering."""
        os._exit(3)

    return server


def stdio_command() -> tuple[str, list[str]]:
    """The command and arguments that start this server over stdio."""
    return sys.executable, [SCRIPT]


@contextmanager
def configured_stdio(owner: Api, server_id: str, env: dict[str, str]) -> Iterator[None]:
    """This server saved in the settings as `server_id`, started with `env`; removed when the
    block ends."""
    command, args = stdio_command()
    entry = {"command": command, "args": args, "env": env}
    owner.ok("PUT", "/api/settings", json={"mcpServers": {server_id: entry}})
    try:
        yield
    finally:
        owner.ok("PUT", "/api/settings", json={"mcpServers": {server_id: None}})


def _serve_http() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(build_server().streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[str]


@contextmanager
def serve_http() -> Iterator[HttpServer]:
    """Start the server over Streamable HTTP in a subprocess; stop it on exit.

    Blocking: use it from a synchronous fixture, not from inside the event loop.
    """
    process = subprocess.Popen(
        [sys.executable, SCRIPT, "--http"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake MCP server did not start: {line!r}")
        yield HttpServer(f"http://127.0.0.1:{int(line.split()[1])}/mcp", process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        _serve_http()
    else:
        build_server().run("stdio")
