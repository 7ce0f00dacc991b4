"""Agents and messages that change: an edit's new mention, a deleted trigger, threads."""

from __future__ import annotations

import time
from typing import Any

from tests.agents.conftest import Room, provider_settings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import stall, text, tool_call, tool_calls
from tests.support import Server, Ws, history, new_channel, post, wait_until


def test_an_edit_that_fixes_an_agents_name_gets_its_answer(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Helper"})
    fake_openai.enqueue(text("Here to help."))
    message_id = room.post("@Helpr are you there?")
    room.ws.expect("message", id=message_id)
    path = f"/api/messages/{message_id}"
    room.api.ok("PATCH", path, json={"content": "@Helper are you there?"})
    reply = room.reply()
    assert reply["data"]["content"] == "Here to help."
    asked = len(fake_openai.model_requests)
    room.api.ok("PATCH", path, json={"content": "@Helper are you there now?"})
    time.sleep(0.5)
    assert len(fake_openai.model_requests) == asked, "a mention already there answers once"


def test_deleting_a_message_stops_the_reply_being_written_to_it(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Talker"})
    fake_openai.enqueue(stall(text("A", " long", " answer", " that never ends"), after=2))
    message_id = room.post("@Talker go on")
    start = room.ws.expect("stream_start")
    room.ws.expect("stream_chunk")
    room.api.ok("DELETE", f"/api/messages/{message_id}")
    end = room.ws.expect("stream_end", timeout=10)
    assert end["data"] == {"messageId": start["data"]["messageId"], "cancelled": True}


def test_an_agent_mentioned_in_a_thread_answers_inside_it_with_the_thread_as_context(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Threader"})
    room.post("a main-timeline message the thread must not see")
    root = room.post("the thread's root")
    room.post("another main-timeline message")
    fake_openai.enqueue(text("In the thread."))
    asked = room.post("@Threader what do you think?", threadId=root)
    start = room.ws.expect("stream_start")
    assert start["data"]["threadId"] == root
    chunk = room.ws.expect("stream_chunk")
    assert chunk["data"]["threadId"] == root
    end = room.ws.expect("stream_end")
    assert end["data"]["threadId"] == root
    reply = room.ws.expect("message", id=end["data"]["messageId"])["data"]
    assert reply["threadId"] == root and reply["content"] == "In the thread."

    def root_updates() -> list[dict[str, Any]]:
        seen = room.ws.seen
        return [
            e["data"] for e in seen if e["type"] == "message_updated" and e["data"]["id"] == root
        ]

    while not any(u["thread"]["replyCount"] == 2 for u in root_updates()):
        room.ws.recv()
    updated = {"data": root_updates()[-1]}
    assert updated["data"]["thread"]["participantIds"][-1] == room.agents[0]["id"]
    sent = [m["content"] for m in fake_openai.model_requests[-1].body["messages"][1:]]
    assert sent == ["Owner: the thread's root", "Owner: @Threader what do you think?"]
    main = [m["id"] for m in room.history()]
    assert asked not in main and reply["id"] not in main and root in main


def test_a_reply_in_a_thread_stored_as_interrupted_stays_in_its_thread(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    fresh_server.start()
    api = fresh_server.login()
    api.ok("PUT", "/api/settings", json=provider_settings(fake_openai, fake_anthropic))
    agent = api.ok("POST", "/api/agents", json={"name": "Stopped", "model": "oai/m"})["agent"]
    channel = new_channel(api, [agent["id"]])["id"]
    root = post(api, channel, "a root")
    fake_openai.enqueue(stall(text("Half", " an", " answer"), after=2))
    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel)
        post(api, channel, "@Stopped go", threadId=root)
        start = ws.expect("stream_start")["data"]
        assert start["threadId"] == root
        seen = ""
        while seen != "Half an":
            seen += ws.expect("stream_chunk")["data"]["content"]
    api.close()
    fresh_server.stop()
    fake_openai.release()
    fresh_server.start()
    with fresh_server.login() as api:
        thread = history(api, channel, threadId=root)
        assert [m["id"] for m in thread][-1] == start["messageId"]
        assert thread[-1]["threadId"] == root and thread[-1]["metadata"]["interrupted"] is True
        [head] = history(api, channel)
        assert head["thread"]["replyCount"] == 2


def test_a_call_between_agents_from_a_thread_stays_in_the_thread(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Wonderer", "tools": ["call_agent"]}, {"name": "Sage"})
    root = room.post("a question for the thread")
    fake_openai.enqueue(
        tool_calls(tool_call("call_agent", {"agent": "sage", "message": "what is 6x7?"})),
        text("42, says the expert."),
        text("The expert says: 42."),
    )
    room.post("@Wonderer ask the sage", threadId=root)
    final = room.ws.expect("message", 20, content="The expert says: 42.")
    assert final["data"]["threadId"] == root
    thread = room.api.ok("GET", "/api/messages", params={"channelId": room.id, "threadId": root})[
        "messages"
    ]
    assert {m["threadId"] for m in thread[1:]} == {root}
    kinds = [(m["type"], m["content"]) for m in thread]
    assert ("text", "@Sage what is 6x7?") in kinds
    assert ("text", "42, says the expert.") in kinds
    assert [m["id"] for m in room.history()] == [root]
    tool_events = [e for e in room.ws.seen if e["type"] in ("tool_call", "tool_result")]
    assert tool_events and all(e["data"]["threadId"] == root for e in tool_events)
    replies = [m for m in thread[1:] if m["type"] not in ("tool_call", "tool_result")]
    wait_until(
        lambda: room.history()[0]["thread"]["replyCount"] == len(replies), what="the summary"
    )


def test_an_agent_reacts_through_its_react_tool(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Reactor", "tools": ["react"]})
    other_channel = new_channel(room.api)["id"]
    elsewhere = post(room.api, other_channel, "another channel's message")
    fake_openai.enqueue(
        tool_calls(tool_call("react", {"emoji": "👍"})),
        tool_calls(tool_call("react", {"emoji": "👍", "messageId": elsewhere})),
        tool_calls(tool_call("react", {"emoji": "nope"})),
        text("Done."),
    )
    asked = room.post("@Reactor please acknowledge")
    added = room.ws.expect("reaction_added", messageId=asked)
    assert added["data"]["userId"] == room.agents[0]["id"] and added["data"]["emoji"] == "👍"
    room.reply()
    results = [e["data"]["result"] for e in room.ws.seen if e["type"] == "tool_result"]
    assert results[0].startswith("Reaction 👍 added")
    assert "No message of this channel" in results[1]
    assert "exactly one emoji" in results[2]
    message = next(m for m in room.history() if m["id"] == asked)
    assert message["reactions"] == [{"emoji": "👍", "count": 1, "userIds": [room.agents[0]["id"]]}]
    [other] = history(room.api, other_channel)
    assert other["reactions"] == []


def test_a_chain_started_in_a_thread_runs_in_it(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Dora"}, {"name": "Eli"})
    root = room.post("plan it in a thread")
    fake_openai.enqueue(text("Dora's draft."), text("Eli's review."))
    room.post("@Dora @Eli plan a trip", threadId=root)
    room.ws.expect("collab_status", 20, status="completed")
    thread = room.api.ok("GET", "/api/messages", params={"channelId": room.id, "threadId": root})[
        "messages"
    ]
    answers = [(m["content"], m["threadId"]) for m in thread if m["agentId"]]
    assert answers == [("Dora's draft.", root), ("Eli's review.", root)]
    assert [m["id"] for m in room.history()] == [root]


def test_a_dms_automatic_answer_to_a_thread_reply_stays_in_the_thread(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Pal"}, kind="dm")
    fake_openai.enqueue(text("On the main timeline."), text("In the thread."))
    root = room.post("hello")
    assert room.reply()["data"]["threadId"] is None
    room.post("more on this", threadId=root)
    reply = room.reply()["data"]
    assert reply["threadId"] == root and reply["content"] == "In the thread."
    sent = [m["content"] for m in fake_openai.model_requests[-1].body["messages"][1:]]
    assert sent == ["Owner: hello", "Owner: more on this"]
