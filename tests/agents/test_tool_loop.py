"""The tool loop: calls announced and answered as events, stored, and every failure survived."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.conftest import Room
from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls
from tests.fakes.search_servers import FakeSearchServer
from tests.support import Api, unique

ADD = "mcp:fx:add"


@pytest.fixture(scope="module")
def searxng() -> Iterator[FakeSearchServer]:
    with FakeSearchServer("searxng") as fake:
        yield fake


@pytest.fixture(scope="module")
def tools_configured(owner: Api, searxng: FakeSearchServer) -> None:
    command, args = stdio_command()
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "mcpServers": {"fx": {"command": command, "args": args}},
            "webSearch": {"provider": "searxng", "baseUrl": searxng.base_url},
        },
    )


@pytest.fixture
def agent_limits(owner: Api) -> Iterator[Any]:
    """Change `settings.agents` for one test and put the defaults back after."""

    def change(**limits: Any) -> None:
        owner.ok("PUT", "/api/settings", json={"agents": limits})

    yield change
    owner.ok("PUT", "/api/settings", json={"agents": {"toolRounds": 8, "toolTimeoutSeconds": 60}})


def tool_events(room: Room, reply_id: str) -> list[tuple[str, str, Any]]:
    out = []
    for e in room.ws.seen:
        data = e.get("data", {})
        if e["type"] == "tool_call" and data["messageId"] == reply_id:
            out.append(("tool_call", data["toolName"], data["status"]))
        elif e["type"] == "tool_result" and data["messageId"] == reply_id:
            out.append(("tool_result", data["toolName"], data["result"]))
    return out


def test_a_tool_round_trip(tools_configured: None, make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Adder", "tools": [ADD]})
    fake_openai.enqueue(
        tool_calls(tool_call("mcp__fx__add", {"a": 2, "b": 3}, pieces=4)), text("It is 5.")
    )
    room.post("@Adder what is 2+3?")
    reply = room.reply(timeout=60)
    reply_id = reply["data"]["id"]
    assert reply["data"]["content"] == "It is 5."
    assert tool_events(room, reply_id) == [
        ("tool_call", ADD, "calling"),
        ("tool_call", ADD, "completed"),
        ("tool_result", ADD, "5"),
    ]
    calling = next(e for e in room.ws.seen if e["type"] == "tool_call")
    assert calling["data"]["arguments"] == {"a": 2, "b": 3}
    first, second = fake_openai.model_requests[-2:]
    offered = [t["function"]["name"] for t in first.body["tools"]]
    assert offered == ["mcp__fx__add"]
    assert "- mcp__fx__add: Add two integers." in first.body["messages"][0]["content"]
    assistant, result = second.body["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "mcp__fx__add"
    assert result["role"] == "tool" and result["content"] == "5"
    stored = {m["type"]: m for m in room.history() if m["type"] in ("tool_call", "tool_result")}
    assert stored["tool_call"]["metadata"]["arguments"] == {"a": 2, "b": 3}
    assert stored["tool_call"]["metadata"]["status"] == "completed"
    assert stored["tool_result"]["content"] == "5"
    assert stored["tool_result"]["metadata"]["replyId"] == reply_id


def test_several_tools_in_one_round_start_together(
    tools_configured: None, make_room: Any, fake_openai: FakeOpenAI, searxng: FakeSearchServer
) -> None:
    room: Room = make_room({"name": "Multi", "tools": [ADD, "web_search", "mcp:fx:sleep"]})
    fake_openai.enqueue(
        tool_calls(
            tool_call("mcp__fx__sleep", {"seconds": 0.3}),
            tool_call("mcp__fx__add", {"a": 1, "b": 1}),
            tool_call("web_search", {"query": "palaver", "count": 2}),
        ),
        text("Done."),
    )
    room.post("@Multi do three things")
    reply = room.reply(timeout=60)
    events = tool_events(room, reply["data"]["id"])
    statuses = [(kind, status) for kind, _, status in events if kind == "tool_call"]
    assert statuses[:3] == [("tool_call", "calling")] * 3
    assert sorted(s for _, s in statuses[3:]) == ["completed"] * 3
    results = {name: result for kind, name, result in events if kind == "tool_result"}
    assert results[ADD] == "2"
    found = json.loads(results["web_search"])
    assert len(found) == 2 and {"title", "url", "snippet"} <= set(found[0])
    assert searxng.last.query["q"] == "palaver"


def test_a_failing_tool_becomes_an_error_result(
    tools_configured: None, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Unlucky", "tools": ["mcp:fx:fail"]})
    fake_openai.enqueue(
        tool_calls(tool_call("mcp__fx__fail", {"reason": "disk on fire"})), text("Sorry.")
    )
    room.post("@Unlucky try")
    reply = room.reply(timeout=60)
    events = tool_events(room, reply["data"]["id"])
    assert events[1] == ("tool_call", "mcp:fx:fail", "error")
    assert "disk on fire" in events[2][2]
    assert reply["data"]["content"] == "Sorry."
    assert "disk on fire" in fake_openai.model_requests[-1].body["messages"][-1]["content"]


def test_a_tool_that_times_out_becomes_an_error_result(
    tools_configured: None, make_room: Any, fake_openai: FakeOpenAI, agent_limits: Any
) -> None:
    agent_limits(toolTimeoutSeconds=0.5)
    room: Room = make_room({"name": "Patient", "tools": ["mcp:fx:sleep"]})
    fake_openai.enqueue(tool_calls(tool_call("mcp__fx__sleep", {"seconds": 5})), text("Gave up."))
    room.post("@Patient wait")
    reply = room.reply(timeout=60)
    events = tool_events(room, reply["data"]["id"])
    assert events[1][2] == "error"
    assert "timed out" in events[2][2]
    assert reply["data"]["content"] == "Gave up."


def test_a_tool_not_allowed_or_unknown_or_badly_called_is_an_error_result(
    tools_configured: None, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Limited", "tools": [ADD]})
    fake_openai.enqueue(
        tool_calls(
            tool_call("web_search", {"query": "x"}),
            tool_call("no_such_tool", {}),
            tool_call("mcp__fx__add", {"a": "two", "b": 3}),
            tool_call("mcp__fx__add", "{not json", pieces=2),
        ),
        text("Fine."),
    )
    room.post("@Limited go")
    reply = room.reply(timeout=60)
    results = [r for kind, _, r in tool_events(room, reply["data"]["id"]) if kind == "tool_result"]
    assert "not available to this agent" in results[0]
    assert "not available to this agent" in results[1]
    assert "invalid arguments" in results[2]
    assert "not valid JSON" in results[3]
    assert reply["data"]["content"] == "Fine."


@pytest.mark.parametrize(
    "raw",
    ['{"a": NaN, "b": 1}', '{"a": 1, "b": -Infinity}', '{"a": ' + "[" * 1500 + "]" * 1500 + "}"],
    ids=["nan", "infinity", "deep"],
)
def test_non_standard_json_from_the_model_never_breaks_the_channels_history(
    tools_configured: None, make_room: Any, fake_openai: FakeOpenAI, raw: str
) -> None:
    """A guest could ask the model for NaN: stored as is, it would make every history read fail."""
    room: Room = make_room({"name": unique("Odd"), "tools": [ADD]})
    fake_openai.enqueue(tool_calls(tool_call("mcp__fx__add", raw, pieces=2)), text("Odd."))
    room.post(f"@{room.agents[0]['name']} go")
    reply = room.reply(timeout=60)
    assert reply["data"]["content"] == "Odd."
    results = [r for kind, _, r in tool_events(room, reply["data"]["id"]) if kind == "tool_result"]
    assert "not valid JSON" in results[0]
    history = room.history()
    (call,) = [m for m in history if m["type"] == "tool_call"]
    assert call["metadata"]["arguments"] == {"_raw": raw}


def test_the_round_limit_ends_with_one_call_without_tools(
    tools_configured: None, make_room: Any, fake_openai: FakeOpenAI, agent_limits: Any
) -> None:
    agent_limits(toolRounds=2)
    room: Room = make_room({"name": "Looper", "tools": [ADD]})
    again = tool_calls(tool_call("mcp__fx__add", {"a": 1, "b": 2}))
    fake_openai.enqueue(again, again, text("Final answer."))
    room.post("@Looper loop")
    reply = room.reply(timeout=60)
    assert reply["data"]["content"] == "Final answer."
    requests = fake_openai.model_requests
    assert len(requests) == 3
    assert [("tools" in r.body) for r in requests] == [True, True, False]


def test_tools_lists_builtin_and_bridged_tools_with_server_state(
    tools_configured: None, owner: Api
) -> None:
    body = owner.ok("GET", "/api/tools")
    names = {t["name"] for t in body["tools"]}
    assert {"web_search", ADD, "mcp:fx:fail"} <= names
    add = next(t for t in body["tools"] if t["name"] == ADD)
    assert add["parameters"]["properties"].keys() >= {"a", "b"}
    assert body["mcpServers"]["fx"]["state"] == "ready"
