"""`call_agent`: asking another agent, nesting, and refusing cycles."""

from __future__ import annotations

import time
from typing import Any

from tests.agents.conftest import Room
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text, tool_call, tool_calls

CALL = "call_agent"


def tool_results(room: Room) -> list[str]:
    return [e["data"]["result"] for e in room.ws.seen if e["type"] == "tool_result"]


def test_an_agent_asks_another_and_gets_its_answer(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Asker", "tools": [CALL]}, {"name": "Expert"})
    fake_openai.enqueue(
        tool_calls(tool_call(CALL, {"agent": "expert", "message": "what is 6x7?"})),
        text("42, says the expert."),
        text("The expert says: 42."),
    )
    room.post("@Asker ask the expert")
    expert_start = room.ws.expect("stream_start", agentId=room.agents[1]["id"])
    expert_reply = room.ws.expect("message", id=expert_start["data"]["messageId"])
    assert expert_reply["data"]["content"] == "42, says the expert."
    final = room.reply()
    assert final["data"]["agentId"] == room.agents[0]["id"]
    assert final["data"]["content"] == "The expert says: 42."
    assert tool_results(room) == ["42, says the expert."]
    asked = next(m for m in room.history() if m["content"] == "@Expert what is 6x7?")
    assert asked["agentId"] == room.agents[0]["id"]
    expert_request = fake_openai.model_requests[1].body["messages"]
    assert expert_request[-1]["content"].endswith("@Expert what is 6x7?")
    time.sleep(0.3)
    assert len(fake_openai.model_requests) == 3, "the question itself triggers nothing more"


def test_a_call_back_to_an_agent_in_the_path_is_refused(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Ping", "tools": [CALL]}, {"name": "Pong", "tools": [CALL]})
    fake_openai.enqueue(
        tool_calls(tool_call(CALL, {"agent": "Pong", "message": "hi"})),
        tool_calls(tool_call(CALL, {"agent": "Ping", "message": "hi back"})),
        text("Pong gives up."),
        text("Ping is done."),
    )
    room.post("@Ping start")
    final = room.ws.expect("message", 30, agentId=room.agents[0]["id"], content="Ping is done.")
    assert final
    refused = tool_results(room)[0]
    assert "already in this chain of calls" in refused


def test_calls_nest_at_most_three_deep(make_room: Any, fake_openai: FakeOpenAI) -> None:
    names = ["N1", "N2", "N3", "N4", "N5"]
    room: Room = make_room(*({"name": n, "tools": [CALL]} for n in names))
    for callee in names[1:]:
        fake_openai.enqueue(tool_calls(tool_call(CALL, {"agent": callee, "message": "deeper"})))
    fake_openai.enqueue(*(text(f"answer {i}") for i in range(4)))
    room.post("@N1 go deep")
    room.ws.expect("message", 30, agentId=room.agents[0]["id"], content="answer 3")
    results = tool_results(room)
    assert "nest at most 3 deep" in results[0]
    assert results[1:] == ["answer 0", "answer 1", "answer 2"]
