"""Fake model servers on loopback, configured as providers of the shared Palaver server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.support import Api, Server, Ws, unique


@pytest.fixture(scope="session")
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="session")
def fake_anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def provider_settings(openai: FakeOpenAI, anthropic: FakeAnthropic) -> dict[str, Any]:
    return {
        "providers": {
            "oai": {"type": "openai", "baseUrl": f"{openai.url}/v1", "apiKey": "sk-test-oai"},
            "ant": {"type": "anthropic", "baseUrl": anthropic.url, "apiKey": "sk-test-ant"},
        }
    }


@pytest.fixture(scope="session")
def providers(owner: Api, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic) -> None:
    owner.ok("PUT", "/api/settings", json=provider_settings(fake_openai, fake_anthropic))


@pytest.fixture(autouse=True)
def _fresh_fakes(fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic) -> Iterator[None]:
    fake_openai.reset()
    fake_anthropic.reset()
    yield
    fake_openai.release()
    fake_anthropic.release()


@dataclass
class Room:
    """A channel with agents, and a socket subscribed to it."""

    api: Api
    channel: dict[str, Any]
    agents: list[dict[str, Any]]
    ws: Ws

    @property
    def id(self) -> str:
        return str(self.channel["id"])

    def post(self, content: str, **extra: Any) -> str:
        body = {"channelId": self.id, "content": content, "type": "text", **extra}
        return str(self.api.ok("POST", "/api/messages", json=body)["id"])

    def history(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.api.ok(
            "GET", "/api/messages", params={"channelId": self.id, "limit": 200}
        )["messages"]
        return found

    def reply(self, timeout: float = 15) -> dict[str, Any]:
        """Wait for the next completed agent reply (its `message` event)."""
        end = self.ws.expect("stream_end", timeout)
        return self.ws.expect("message", timeout, id=end["data"]["messageId"])


@pytest.fixture
def make_room(server: Server, owner: Api, providers: None) -> Iterator[Any]:
    rooms: list[Room] = []

    def make(*agents: dict[str, Any], kind: str = "group") -> Room:
        made = [
            owner.ok(
                "POST",
                "/api/agents",
                json={"model": "oai/gpt-test", **a, "name": a.get("name", unique("Agent"))},
            )["agent"]
            for a in agents
        ]
        channel = owner.ok(
            "POST",
            "/api/channels",
            json={"name": unique("room"), "type": kind, "agentIds": [a["id"] for a in made]},
        )["channel"]
        ws = Ws(server, owner.token)
        ws.subscribe(channel["id"])
        room = Room(owner, channel, made, ws)
        rooms.append(room)
        return room

    yield make
    for room in rooms:
        room.ws.close()
