"""The MCP bridge against a real MCP server (tests/fakes/mcp_server.py), over stdio and HTTP."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from blockbuster import blockbuster_ctx

from palaver.settings import McpServerConfig
from palaver.tools.base import Tool, ToolContext, ToolError
from palaver.tools.mcp import McpBridge, parse_bridged_name
from tests.fakes.mcp_server import HttpServer, serve_http, stdio_command

CTX = ToolContext(
    agent_id="agent_1", agent_name="Ada", channel_id="ch_1", user_id=None, message_id="msg_1"
)
Servers = dict[str, McpServerConfig]


def stdio(timeout: float = 10.0, **env: str) -> McpServerConfig:
    command, args = stdio_command()
    return McpServerConfig(command=command, args=args, env=env, timeoutSeconds=timeout)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_until_gone(pid: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while process_alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        await asyncio.sleep(0.05)


async def call(bridge: McpBridge, name: str, /, **args: object) -> str:
    tool = await bridge.resolve(name)
    assert tool is not None, name
    return await tool(CTX, dict(args))


def bridge_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-server:")]


@pytest.fixture(autouse=True)
def _no_blocking_calls_on_the_loop() -> Iterator[None]:
    """The service runs with blocking-call detection; so do these tests."""
    with blockbuster_ctx():
        yield


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    with serve_http() as server:
        yield server


@pytest.fixture
def servers() -> Servers:
    return {}


@pytest.fixture
async def bridge(servers: Servers) -> AsyncIterator[McpBridge]:
    bridge = McpBridge(lambda: servers)
    yield bridge
    await bridge.aclose()
    assert bridge_tasks() == []


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {tool.name: tool for tool in tools}


def test_bridged_names_split_into_server_and_tool() -> None:
    assert parse_bridged_name("mcp:files:read") == ("files", "read")
    assert parse_bridged_name("mcp:files:ns:read") == ("files", "ns:read")
    assert parse_bridged_name("web_search") is None
    assert parse_bridged_name("mcp:files") is None


async def test_stdio_server_tools_are_listed_with_their_schemas(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["fake"] = stdio()
    assert bridge.status()["fake"]["state"] == "idle"

    tools = by_name(await bridge.list_tools())

    assert {"mcp:fake:add", "mcp:fake:fail", "mcp:fake:crash"} <= tools.keys()
    add = tools["mcp:fake:add"]
    assert add.description == "Add two integers."
    assert add.parameters["type"] == "object"
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"
    status = bridge.status()["fake"]
    assert status == {
        "state": "ready",
        "error": None,
        "tools": len(tools),
        "transport": "stdio",
        "retryInSeconds": None,
    }


async def test_calling_a_working_tool_returns_its_text(bridge: McpBridge, servers: Servers) -> None:
    servers["fake"] = stdio()
    assert await call(bridge, "mcp:fake:add", a=2, b=40) == "42"


async def test_a_failing_tool_raises_tool_error_with_its_message(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["fake"] = stdio()
    with pytest.raises(ToolError, match="the disk is on fire"):
        await call(bridge, "mcp:fake:fail", reason="the disk is on fire")
    assert await call(bridge, "mcp:fake:add", a=1, b=1) == "2"


async def test_configured_env_reaches_the_server_process(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["fake"] = stdio(FAKE_TOKEN="s3cret")
    assert await call(bridge, "mcp:fake:env", name="FAKE_TOKEN") == "s3cret"


async def test_resolving_an_unknown_name_gives_none(bridge: McpBridge, servers: Servers) -> None:
    servers["fake"] = stdio()
    assert await bridge.resolve("mcp:fake:no_such_tool") is None
    assert await bridge.resolve("mcp:nobody:add") is None
    assert await bridge.resolve("web_search") is None


async def test_a_server_that_cannot_start_fails_alone_and_quickly(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["broken"] = McpServerConfig(command="/nonexistent/mcp-server", timeoutSeconds=10)
    servers["fake"] = stdio()

    names = {tool.name for tool in await bridge.list_tools()}

    assert "mcp:fake:add" in names
    assert not any(name.startswith("mcp:broken:") for name in names)
    status = bridge.status()["broken"]
    assert status["state"] == "error"
    assert "/nonexistent/mcp-server" in status["error"]
    tool = await bridge.resolve("mcp:broken:anything")
    assert tool is not None
    started = time.monotonic()
    with pytest.raises(ToolError, match="MCP server 'broken' is unavailable"):
        await tool(CTX, {})
    assert time.monotonic() - started < 0.5
    assert await call(bridge, "mcp:fake:add", a=3, b=4) == "7"


async def test_an_unusable_settings_entry_is_reported_and_never_started(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["empty"] = McpServerConfig()
    assert await bridge.list_tools() == []
    status = bridge.status()["empty"]
    assert status["state"] == "error"
    assert "neither a command" in status["error"]
    with pytest.raises(ToolError, match="cannot start"):
        await bridge.call("empty", "x", {})


async def test_a_server_that_never_answers_does_not_hold_up_the_others(
    bridge: McpBridge, servers: Servers
) -> None:
    silent = "import sys; sys.stdin.read()"
    servers["silent"] = McpServerConfig(
        command=sys.executable, args=["-c", silent], timeoutSeconds=1
    )
    servers["fake"] = stdio()
    assert await call(bridge, "mcp:fake:add", a=1, b=2) == "3"

    pending = asyncio.create_task(bridge.call("silent", "anything", {}))
    await asyncio.sleep(0.1)
    assert bridge.status()["silent"]["state"] == "starting"
    started = time.monotonic()
    assert await call(bridge, "mcp:fake:add", a=1, b=2) == "3"
    assert time.monotonic() - started < 0.5

    with pytest.raises(ToolError, match="did not start within 1 s"):
        await pending
    await asyncio.sleep(0.1)
    assert bridge.status()["silent"]["state"] == "error"


async def test_a_hanging_call_times_out_and_the_session_stays_usable(
    bridge: McpBridge, servers: Servers
) -> None:
    # The server's timeout bounds its start as well as each call: the start of a Python MCP
    # server takes more than 3 s on a 2-core machine busy with the suite's other worker, so the
    # timeout is the one the other tests here give their servers.
    servers["fake"] = stdio(timeout=10.0)
    assert await call(bridge, "mcp:fake:add", a=0, b=0) == "0"
    started = time.monotonic()
    with pytest.raises(ToolError, match="did not answer within 10 s"):
        await call(bridge, "mcp:fake:sleep", seconds=30)
    assert time.monotonic() - started < 11
    assert await call(bridge, "mcp:fake:add", a=5, b=5) == "10"
    assert bridge.status()["fake"]["state"] == "ready"


async def test_a_crashed_stdio_server_backs_off_then_recovers(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["fake"] = stdio()
    first_pid = int(await call(bridge, "mcp:fake:pid"))

    with pytest.raises(ToolError, match="exited during the call"):
        await call(bridge, "mcp:fake:crash")

    status = bridge.status()["fake"]
    assert status["state"] == "backoff"
    assert status["error"] == "the server process exited"
    assert 0 < status["retryInSeconds"] <= 0.5
    add = await bridge.resolve("mcp:fake:add")
    assert add is not None
    assert add.parameters["required"] == ["a", "b"], "the last known schema is kept"
    started = time.monotonic()
    with pytest.raises(ToolError, match="will be tried again"):
        await add(CTX, {"a": 1, "b": 1})
    assert time.monotonic() - started < 0.2

    await asyncio.sleep(0.6)
    assert await add(CTX, {"a": 1, "b": 1}) == "2"
    assert bridge.status()["fake"]["state"] == "ready"
    second_pid = int(await call(bridge, "mcp:fake:pid"))
    assert second_pid != first_pid
    assert not process_alive(first_pid)


async def test_a_server_killed_while_idle_is_noticed_without_a_call(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["fake"] = stdio()
    pid = int(await call(bridge, "mcp:fake:pid"))
    os.kill(pid, 9)
    deadline = time.monotonic() + 5
    while bridge.status()["fake"]["state"] == "ready":
        assert time.monotonic() < deadline, "the death was not noticed"
        await asyncio.sleep(0.05)
    assert bridge.status()["fake"]["state"] == "backoff"


async def test_back_off_doubles_while_the_server_keeps_failing(servers: Servers) -> None:
    servers["broken"] = McpServerConfig(command="/nonexistent/mcp-server")
    bridge = McpBridge(lambda: servers, backoff_initial=0.1, backoff_max=0.3)
    try:
        delays = []
        for _ in range(4):
            with pytest.raises(ToolError):
                await bridge.call("broken", "x", {})
            delays.append(bridge.status()["broken"]["retryInSeconds"])
            await asyncio.sleep(delays[-1] + 0.05)
        assert delays == [0.1, 0.2, 0.3, 0.3]
    finally:
        await bridge.aclose()


async def test_an_edited_server_restarts_and_a_removed_one_stops(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["fake"] = stdio(FAKE_TOKEN="old")
    old_pid = int(await call(bridge, "mcp:fake:pid"))

    servers["fake"] = stdio(FAKE_TOKEN="new")
    assert await call(bridge, "mcp:fake:env", name="FAKE_TOKEN") == "new"
    new_pid = int(await call(bridge, "mcp:fake:pid"))
    assert new_pid != old_pid
    await wait_until_gone(old_pid)

    del servers["fake"]
    assert await bridge.list_tools() == []
    assert "fake" not in bridge.status()
    with pytest.raises(ToolError, match="not configured"):
        await bridge.call("fake", "add", {"a": 1, "b": 2})
    await wait_until_gone(new_pid)


async def test_aclose_stops_every_process_and_task(servers: Servers) -> None:
    servers["one"] = stdio()
    servers["two"] = stdio()
    bridge = McpBridge(lambda: servers)
    await bridge.list_tools()
    pids = [int(await call(bridge, f"mcp:{sid}:pid")) for sid in ("one", "two")]
    assert all(process_alive(pid) for pid in pids)

    await bridge.aclose()

    assert not any(process_alive(pid) for pid in pids)
    assert bridge_tasks() == []
    assert bridge.status()["one"]["state"] == "idle"
    with pytest.raises(ToolError, match="shut down"):
        await bridge.call("one", "add", {"a": 1, "b": 2})


async def test_http_server_tools_are_listed_and_called(
    bridge: McpBridge, servers: Servers, http_server: HttpServer
) -> None:
    servers["remote"] = McpServerConfig(
        url=http_server.url, headers={"X-Api-Key": "k-123"}, timeoutSeconds=10
    )

    tools = by_name(await bridge.list_tools())

    assert tools["mcp:remote:add"].parameters["required"] == ["a", "b"]
    assert bridge.status()["remote"]["transport"] == "http"
    assert bridge.status()["remote"]["state"] == "ready"
    assert await tools["mcp:remote:add"](CTX, {"a": 20, "b": 22}) == "42"
    assert await call(bridge, "mcp:remote:header", name="X-Api-Key") == "k-123"
    with pytest.raises(ToolError, match="always fails"):
        await call(bridge, "mcp:remote:fail")


async def test_an_unreachable_http_server_is_an_error_state(
    bridge: McpBridge, servers: Servers
) -> None:
    servers["gone"] = McpServerConfig(url="http://127.0.0.1:9/mcp", timeoutSeconds=5)
    assert await bridge.list_tools() == []
    status = bridge.status()["gone"]
    assert status["state"] == "error"
    assert "ConnectError" in status["error"]


@pytest.fixture
def doomed_http_server() -> Iterator[HttpServer]:
    with serve_http() as server:
        yield server


async def test_an_http_server_that_dies_backs_off(
    bridge: McpBridge, servers: Servers, doomed_http_server: HttpServer
) -> None:
    servers["remote"] = McpServerConfig(url=doomed_http_server.url, timeoutSeconds=5)
    assert await call(bridge, "mcp:remote:add", a=1, b=1) == "2"
    doomed_http_server.process.kill()
    await asyncio.to_thread(doomed_http_server.process.wait)

    with pytest.raises(ToolError, match="remote"):
        await call(bridge, "mcp:remote:add", a=1, b=1)
    await asyncio.sleep(0.1)
    status = bridge.status()["remote"]
    assert status["state"] == "backoff"
    assert status["error"]
    started = time.monotonic()
    with pytest.raises(ToolError, match="will be tried again"):
        await call(bridge, "mcp:remote:add", a=1, b=1)
    assert time.monotonic() - started < 0.2
