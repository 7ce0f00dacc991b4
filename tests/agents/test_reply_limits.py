"""What bounds one reply: its whole duration, its length, and the size of the prompt."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.conftest import Room
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import burst, keep_alive, text
from tests.support import Api


@pytest.fixture
def agent_limits(owner: Api) -> Iterator[Any]:
    """Change `agents.*` settings for one test; the defaults come back after it."""

    def change(**limits: int) -> None:
        owner.ok("PUT", "/api/settings", json={"agents": limits})

    yield change
    owner.ok("PUT", "/api/settings", json={"agents": {"replySeconds": 300, "replyTokens": 1024}})


def test_a_provider_that_keeps_the_stream_alive_forever_is_cut_off_at_the_deadline(
    make_room: Any, fake_openai: FakeOpenAI, agent_limits: Any
) -> None:
    room: Room = make_room({"name": "Endless"})
    fake_openai.enqueue(text("Warm."))
    room.post("@Endless are you there?")
    assert room.reply()["data"]["content"] == "Warm.", "the provider's SDK is loaded"
    agent_limits(replySeconds=3)
    fake_openai.enqueue(keep_alive(text("Hello", " and then"), after=1), text("Back again."))
    room.post("@Endless talk")
    reply = room.reply(timeout=10)["data"]
    assert reply["content"] == "Hello"
    stored = next(m for m in room.history() if m["id"] == reply["id"])
    assert "longer than 3 seconds" in stored["metadata"]["error"]
    room.post("@Endless again")
    assert room.reply(timeout=10)["data"]["content"] == "Back again.", "the channel goes on"


def test_the_reply_deadline_setting_takes_1_to_3600_seconds(owner: Api) -> None:
    for bad in (0, 3601, "soon"):
        answer = owner.put("/api/settings", json={"agents": {"replySeconds": bad}})
        assert answer.status_code == 400, answer.text
        assert "replySeconds" in answer.json()["error"]
    assert owner.ok("GET", "/api/settings")["settings"]["agents"]["replySeconds"] == 300


def test_a_reply_longer_than_reply_tokens_is_cut_and_marked_truncated(
    make_room: Any, fake_openai: FakeOpenAI, agent_limits: Any
) -> None:
    agent_limits(replyTokens=16)
    room: Room = make_room({"name": "Verbose"})
    fake_openai.enqueue(burst(5000))
    room.post("@Verbose go on and on")
    reply = room.reply()["data"]
    assert reply["content"] == "x" * 64, "16 tokens at the estimate of four characters each"
    stored = next(m for m in room.history() if m["id"] == reply["id"])
    assert stored["metadata"]["truncated"] is True
    assert "error" not in stored["metadata"]
    assert fake_openai.model_requests[-1].body["max_tokens"] == 16


def test_a_trigger_longer_than_the_context_is_trimmed_keeping_its_start_and_end(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Reader"})
    fake_openai.enqueue(text("Read it."))
    middle = "".join(f"line {n} of a long paste\n" for n in range(1200))
    content = "@Reader START-OF-PASTE\n" + middle + "QUESTION-AT-THE-END?"
    assert 28_000 < len(content) <= 32_000, "near the longest message allowed"
    room.post(content)
    room.reply()
    sent = fake_openai.model_requests[-1].body["messages"]
    prompt_chars = sum(len(m["content"] or "") for m in sent)
    assert prompt_chars <= (8192 - 1024) * 4, "inside the window, with room for the reply"
    last = sent[-1]["content"]
    assert last.startswith("Owner: @Reader START-OF-PASTE")
    assert last.endswith("QUESTION-AT-THE-END?")
    assert "characters cut" in last
    assert len(last) < len(content)
