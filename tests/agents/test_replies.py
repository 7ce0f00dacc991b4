"""Agents answering: streamed events in order, stored once, failures, cancel, coalescing."""

from __future__ import annotations

import time
from typing import Any

from tests.agents.conftest import Room
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import broken, burst, http_error, malformed, stall, text
from tests.support import Api, Server, Ws, sql


def events_of(ws: Ws, message_id: str) -> list[dict[str, Any]]:
    return [e for e in ws.seen if e.get("data", {}).get("messageId") == message_id]


def test_plain_reply_streams_every_event_in_order_and_is_stored_once(
    make_room: Any, fake_openai: FakeOpenAI, server: Server
) -> None:
    room: Room = make_room({"name": "Plain", "soul": "You are plain."})
    fake_openai.enqueue(text("Hello", " there", ",", " friend."))
    user_id = room.post("@Plain say hello")
    user_event = room.ws.expect("message", id=user_id)
    start = room.ws.expect("stream_start")
    reply = room.reply()
    reply_id = start["data"]["messageId"]
    assert start["data"] == {
        "messageId": reply_id,
        "channelId": room.id,
        "agentId": room.agents[0]["id"],
    }
    kinds = [e["type"] for e in room.ws.seen]
    assert kinds.index("message") < kinds.index("stream_start") < kinds.index("stream_end")
    chunks = [e["data"] for e in room.ws.seen if e["type"] == "stream_chunk"]
    assert "".join(c["content"] for c in chunks) == "Hello there, friend."
    assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))
    assert reply["data"]["id"] == reply_id
    assert reply["data"]["content"] == "Hello there, friend."
    assert user_event["data"]["userId"] is not None
    stored = [m for m in room.history() if m["agentId"]]
    assert [m["id"] for m in stored] == [reply_id]
    assert stored[0]["metadata"]["model"] == "oai/gpt-test"
    usage = stored[0]["metadata"]["usage"]
    assert usage["promptTokens"] > 0 and usage["completionTokens"] > 0
    sent = fake_openai.model_requests[-1].body
    assert sent["model"] == "gpt-test" and sent["stream"] is True
    assert sent["messages"][0]["role"] == "system"
    assert sent["messages"][0]["content"].startswith("You are Plain.\n\nYou are plain.")
    assert sent["messages"][-1] == {"role": "user", "content": "Owner: @Plain say hello"}
    assert sql(server, "select count(*) from reply_drafts") == [(0,)]


def test_history_maps_roles_and_names_authors(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Historian"})
    fake_openai.enqueue(text("First answer."), text("Second answer."))
    room.post("@Historian one")
    room.reply()
    room.post("@Historian two")
    room.reply()
    messages = fake_openai.model_requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "Owner: @Historian one"
    assert messages[2]["content"] == "First answer."


def test_history_is_cut_to_the_context_window(
    owner: Api, make_room: Any, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "providers": {
                "small": {
                    "type": "openai",
                    "baseUrl": f"{fake_openai.url}/v1",
                    "contextWindow": 1500,
                }
            }
        },
    )
    room: Room = make_room({"name": "Forgetful", "model": "small/m"})
    for i in range(12):
        room.post(f"filler {i} " + "words " * 100)
    fake_openai.enqueue(text("ok"))
    room.post("@Forgetful the latest")
    room.reply()
    messages = fake_openai.model_requests[-1].body["messages"]
    assert messages[-1]["content"] == "Owner: @Forgetful the latest"
    assert 1 < len(messages) < 12
    assert sum(len(m["content"]) for m in messages) / 4 < 1500


def test_a_dm_is_answered_without_a_mention(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Direct"}, kind="dm")
    fake_openai.enqueue(text("At your service."))
    room.post("no mention here")
    assert room.reply()["data"]["content"] == "At your service."


def test_mentions_pick_the_longest_name_and_ignore_non_members(
    owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    outsider = owner.ok("POST", "/api/agents", json={"name": "Outsider", "model": "oai/m"})["agent"]
    room: Room = make_room({"name": "Code"}, {"name": "Code Reviewer"})
    fake_openai.enqueue(text("reviewing"))
    room.post("@code reviewer please look")
    start = room.ws.expect("stream_start")
    assert start["data"]["agentId"] == room.agents[1]["id"]
    room.reply()
    room.post("@Outsider are you there? also email@Code and @Coder")
    time.sleep(0.5)
    assert not [e for e in room.ws.seen[-3:] if e["type"] == "stream_start"]
    assert len(fake_openai.model_requests) == 1
    assert outsider["id"] not in room.channel["agentIds"]


def test_mention_by_id_addresses_the_agent(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Identified"})
    fake_openai.enqueue(text("by id"))
    room.post(f"hey @{room.agents[0]['id']}, answer")
    assert room.reply()["data"]["content"] == "by id"


def test_a_provider_error_before_the_stream_ends_it_with_an_error(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Failing"})
    fake_openai.enqueue(http_error(500, "upstream exploded"), text("recovered"))
    user_id = room.post("@Failing hi")
    end = room.ws.expect("stream_end")
    # The vendor's own words go to the owner's log, not to everyone in the channel.
    assert end["data"]["error"] == "The model provider 'oai' failed (HTTP 500)."
    stored = room.ws.expect("message", id=end["data"]["messageId"])["data"]
    assert stored["metadata"]["error"] == end["data"]["error"]
    assert any(m["id"] == user_id for m in room.history())
    room.post("@Failing again")
    assert room.reply()["data"]["content"] == "recovered"


def test_a_stream_that_breaks_keeps_what_arrived(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Broken"})
    fake_openai.enqueue(broken(text("Part", "ial", " and", " more"), after=2))
    room.post("@Broken talk")
    end = room.ws.expect("stream_end")
    assert end["data"]["error"]
    stored = room.ws.expect("message", id=end["data"]["messageId"])["data"]
    assert stored["content"] == "Partial"
    assert stored["metadata"]["error"]


def test_a_malformed_stream_is_a_readable_error(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Garbled"})
    fake_openai.enqueue(malformed(text("a", "b", "c"), after=1))
    room.post("@Garbled talk")
    end = room.ws.expect("stream_end")
    assert end["data"]["error"]
    assert "Traceback" not in end["data"]["error"]


def test_a_refused_connection_is_a_readable_error(owner: Api, make_room: Any) -> None:
    owner.ok(
        "PUT",
        "/api/settings",
        json={"providers": {"nowhere": {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1"}}},
    )
    room: Room = make_room({"name": "Unreachable", "model": "nowhere/m"})
    room.post("@Unreachable hi")
    end = room.ws.expect("stream_end", timeout=30)
    assert "nowhere" in end["data"]["error"]


def test_cancel_stops_a_streaming_reply_and_keeps_the_partial_text(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Chatty"})
    fake_openai.enqueue(stall(text("Long", " story", " never", " ends"), after=2))
    room.post("@Chatty tell me")
    start = room.ws.expect("stream_start")
    reply_id = start["data"]["messageId"]
    room.ws.expect("stream_chunk")
    time.sleep(0.1)
    room.api.ok("POST", f"/api/messages/{reply_id}/cancel")
    end = room.ws.expect("stream_end")
    assert end["data"] == {"messageId": reply_id, "cancelled": True}
    stored = room.ws.expect("message", id=reply_id)["data"]
    assert stored["content"] == "Long story"
    assert stored["metadata"]["cancelled"] is True
    again = room.api.post(f"/api/messages/{reply_id}/cancel")
    assert again.status_code == 409
    assert room.api.post("/api/messages/msg_nope/cancel").status_code == 404


def test_a_client_joining_mid_stream_gets_the_text_so_far_then_live_chunks(
    server: Server, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Storyteller"})
    fake_openai.enqueue(stall(text("Once", " upon", " a", " time."), after=2))
    room.post("@Storyteller a story")
    start = room.ws.expect("stream_start")
    seen = ""
    while seen != "Once upon":
        seen += room.ws.expect("stream_chunk")["data"]["content"]
    with Ws(server, room.api.token) as late:
        late.subscribe(room.id)
        replay_start = late.expect("stream_start")
        assert replay_start == start
        replay = late.expect("stream_chunk")
        assert replay["data"]["content"] == "Once upon"
        fake_openai.release()
        rest = ""
        while True:
            event = late.recv()
            if event["type"] == "stream_end":
                break
            assert event["type"] == "stream_chunk"
            assert event["data"]["seq"] > replay["data"]["seq"]
            rest += event["data"]["content"]
        assert "Once upon" + rest == "Once upon a time."


def test_a_burst_of_tokens_is_coalesced_into_far_fewer_chunks(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Fast"})
    fake_openai.enqueue(burst(1000))
    room.post("@Fast go")
    reply = room.reply()
    chunks = [e["data"] for e in room.ws.seen if e["type"] == "stream_chunk"]
    assert "".join(c["content"] for c in chunks) == "x" * 1000
    assert reply["data"]["content"] == "x" * 1000
    assert len(chunks) < 200
    assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))


def test_one_agent_answers_one_message_at_a_time_in_order(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Orderly"})
    fake_openai.enqueue(text("first", delay=0.05), text("second"))
    room.post("@Orderly one")
    room.post("@Orderly two")
    first = room.reply()
    second = room.reply()
    assert (first["data"]["content"], second["data"]["content"]) == ("first", "second")
    starts = [i for i, e in enumerate(room.ws.seen) if e["type"] == "stream_start"]
    ends = [i for i, e in enumerate(room.ws.seen) if e["type"] == "stream_end"]
    assert ends[0] < starts[1]


def test_replies_in_different_channels_run_concurrently(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    a: Room = make_room({"name": "Slowpoke"})
    b: Room = make_room({"name": "Quick"})
    fake_openai.enqueue(stall(text("waiting", " forever"), after=1), text("quick answer"))
    a.post("@Slowpoke hold on")
    a.ws.expect("stream_chunk")
    b.post("@Quick go")
    assert b.reply()["data"]["content"] == "quick answer"
    fake_openai.release()
    assert a.reply()["data"]["content"] == "waiting forever"


def test_anthropic_provider_streams_a_reply(make_room: Any, fake_anthropic: FakeAnthropic) -> None:
    room: Room = make_room({"name": "Claude", "model": "ant/claude-test", "soul": "Be brief."})
    fake_anthropic.enqueue(text("Bonjour", " à", " tous."))
    room.post("@Claude salut")
    reply = room.reply()
    assert reply["data"]["content"] == "Bonjour à tous."
    body = fake_anthropic.model_requests[-1].body
    assert body["model"] == "claude-test"
    assert body["system"].startswith("You are Claude.")
    assert body["messages"][-1]["role"] == "user"


def test_builtin_echo_model_answers_offline(make_room: Any) -> None:
    room: Room = make_room({"name": "Parrot", "model": "builtin/echo"})
    room.post("@Parrot hello world")
    content = room.reply()["data"]["content"]
    assert "Parrot" in content and "hello world" in content


def test_models_lists_each_provider_and_reports_failures(owner: Api) -> None:
    body = owner.ok("GET", "/api/models")
    ids = {m["id"] for m in body["models"]}
    assert "builtin/echo" in ids
    assert any(i.startswith("oai/") for i in ids)
    echo = next(m for m in body["models"] if m["id"] == "builtin/echo")
    assert "offline" in echo["label"].lower()
    assert (
        "nowhere" in body["errors"]
        or "nowhere" not in owner.ok("GET", "/api/settings")["settings"]["providers"]
    )
