"""Replies cut off by a stop: kept with what had arrived, marked interrupted."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.agents.conftest import provider_settings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import stall, text
from tests.support import Api, Server, Ws


def _start_streaming(
    srv: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> tuple[Api, str, str]:
    """A reply stalled after two pieces; answers the client, the channel and the reply id."""
    srv.start()
    api = srv.login()
    api.ok("PUT", "/api/settings", json=provider_settings(fake_openai, fake_anthropic))
    agent = api.ok("POST", "/api/agents", json={"name": "Stopped", "model": "oai/m"})["agent"]
    channel = api.ok(
        "POST", "/api/channels", json={"name": "c", "type": "dm", "agentIds": [agent["id"]]}
    )["channel"]
    fake_openai.enqueue(stall(text("Half", " an", " answer"), after=2))
    with Ws(srv, api.token) as ws:
        ws.subscribe(channel["id"])
        api.ok("POST", "/api/messages", json={"channelId": channel["id"], "content": "go"})
        reply_id = ws.expect("stream_start")["data"]["messageId"]
        seen = ""
        while seen != "Half an":
            seen += ws.expect("stream_chunk")["data"]["content"]
    return api, channel["id"], reply_id


def _stored(srv: Server, channel_id: str, reply_id: str) -> dict[str, Any]:
    srv.start()
    api = srv.login()
    messages = api.ok("GET", "/api/messages", params={"channelId": channel_id})["messages"]
    api.close()
    return next(m for m in messages if m["id"] == reply_id)


def test_a_reply_cut_off_by_a_crash_is_stored_at_the_next_start(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    api, channel_id, reply_id = _start_streaming(fresh_server, fake_openai, fake_anthropic)
    api.close()
    time.sleep(2.6)
    fresh_server.kill()
    fake_openai.release()
    stored = _stored(fresh_server, channel_id, reply_id)
    assert stored["content"] == "Half an"
    assert stored["metadata"]["interrupted"] is True
    assert stored["agentId"] is not None


def test_a_reply_in_flight_at_a_graceful_stop_is_stored_at_once(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    api, channel_id, reply_id = _start_streaming(fresh_server, fake_openai, fake_anthropic)
    api.close()
    fresh_server.stop()
    fake_openai.release()
    stored = _stored(fresh_server, channel_id, reply_id)
    assert stored["content"] == "Half an"
    assert stored["metadata"]["interrupted"] is True


@pytest.fixture(autouse=True)
def _release_fakes(fake_openai: FakeOpenAI) -> Any:
    yield
    fake_openai.release()
