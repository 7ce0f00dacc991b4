"""Agents calling tools on real MCP servers, over stdio and Streamable HTTP, through crashes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.conftest import Room
from tests.fakes.mcp_server import HttpServer, configured_stdio, serve_http, stdio_command
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.support import Api, Guest, Server, Ws, new_channel, unique


@pytest.fixture(scope="module")
def http_mcp() -> Iterator[HttpServer]:
    with serve_http() as server:
        yield server


@pytest.fixture(scope="module")
def mcp_servers(owner: Api, http_mcp: HttpServer) -> None:
    command, args = stdio_command()
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "mcpServers": {
                "crashy": {"command": command, "args": args},
                "web": {"url": http_mcp.url, "headers": {"X-Team": "blue"}},
            }
        },
    )


def results(room: Room) -> list[str]:
    return [e["data"]["result"] for e in room.ws.seen if e["type"] == "tool_result"]


def test_an_agent_calls_a_tool_served_over_streamable_http(
    mcp_servers: None, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Webby", "tools": ["mcp:web:add", "mcp:web:header"]})
    fake_openai.enqueue(
        tool_calls(
            tool_call("mcp__web__add", {"a": 20, "b": 22}),
            tool_call("mcp__web__header", {"name": "X-Team"}),
        ),
        text("Done."),
    )
    room.post("@Webby add and check the header")
    assert room.reply(timeout=60)["data"]["content"] == "Done."
    assert results(room) == ["42", "blue"]


def test_a_crashed_stdio_server_is_restarted_for_the_next_call(
    mcp_servers: None, make_room: Any, fake_openai: FakeOpenAI, owner: Api
) -> None:
    room: Room = make_room({"name": "Phoenix", "tools": ["mcp:crashy:crash", "mcp:crashy:add"]})
    fake_openai.enqueue(
        tool_calls(tool_call("mcp__crashy__add", {"a": 1, "b": 1})),
        tool_calls(tool_call("mcp__crashy__crash", {})),
        text("It fell over."),
    )
    room.post("@Phoenix crash it")
    assert room.reply(timeout=60)["data"]["content"] == "It fell over."
    assert results(room)[0] == "2"
    assert results(room)[1].startswith("Error:")
    deadline = time.monotonic() + 30
    while owner.ok("GET", "/api/tools")["mcpServers"]["crashy"]["state"] == "backoff":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    fake_openai.enqueue(tool_calls(tool_call("mcp__crashy__add", {"a": 2, "b": 3})), text("Back."))
    room.post("@Phoenix again")
    assert room.reply(timeout=60)["data"]["content"] == "Back."
    assert results(room)[-1] == "5"


def _offered(fake_openai: FakeOpenAI) -> set[str]:
    return {t["function"]["name"] for t in fake_openai.model_requests[-1].body.get("tools", [])}


def test_in_a_channel_with_a_guest_mcp_tools_are_offered_only_if_shared_with_guests(
    mcp_servers: None, providers: None, server: Server, owner: Api, fake_openai: FakeOpenAI
) -> None:
    """An MCP server acts with the owner's access: a guest must not borrow it by asking."""
    agent = owner.ok(
        "POST",
        "/api/agents",
        json={
            "name": unique("Mixed"),
            "model": "oai/gpt-test",
            "tools": ["mcp:web:add", "memory_search"],
        },
    )["agent"]
    with Guest(server, owner) as guest, Ws(server, owner.token) as ws:
        channel = new_channel(owner, agent_ids=[agent["id"]], member_ids=[guest.id])["id"]
        ws.subscribe(channel)
        fake_openai.enqueue(
            tool_calls(tool_call("mcp__web__add", {"a": 1, "b": 2})), text("Refused."), text("Ok.")
        )
        guest.api.ok(
            "POST",
            "/api/messages",
            json={"channelId": channel, "content": f"@{agent['name']} add", "type": "text"},
        )
        ws.expect("stream_end", timeout=60)
        assert _offered(fake_openai) == {"memory_search"}
        (result,) = [e["data"]["result"] for e in ws.seen if e["type"] == "tool_result"]
        assert result.startswith("Error:") and "not available" in result
        owner.ok("PUT", "/api/settings", json={"mcpServers": {"web": {"availableToGuests": True}}})
        try:
            guest.api.ok(
                "POST",
                "/api/messages",
                json={"channelId": channel, "content": f"@{agent['name']} now?", "type": "text"},
            )
            ws.expect("stream_end", timeout=60)
            assert _offered(fake_openai) == {"mcp__web__add", "memory_search"}
        finally:
            owner.ok(
                "PUT", "/api/settings", json={"mcpServers": {"web": {"availableToGuests": False}}}
            )


def test_an_env_var_removed_in_the_settings_is_gone_from_the_restarted_server(
    make_room: Any, fake_openai: FakeOpenAI, owner: Api
) -> None:
    server_id = unique("envy")
    env = {"KEEP_ME": "kept", "DROP_ME": "dropped"}
    with configured_stdio(owner, server_id, env):
        room: Room = make_room({"name": unique("Envy"), "tools": [f"mcp:{server_id}:env"]})
        tool = f"mcp__{server_id}__env"
        for expected in (["kept", "dropped"], ["kept", ""]):
            fake_openai.enqueue(
                tool_calls(
                    tool_call(tool, {"name": "KEEP_ME"}), tool_call(tool, {"name": "DROP_ME"})
                ),
                text("Read."),
            )
            room.post(f"@{room.agents[0]['name']} read the environment")
            assert room.reply(timeout=60)["data"]["content"] == "Read."
            assert results(room)[-2:] == expected
            owner.ok(
                "PUT", "/api/settings", json={"mcpServers": {server_id: {"env": {"DROP_ME": None}}}}
            )
