"""Two real `palaver serve` nodes on one Redis: what one node does, the other hears and counts.

Both nodes use one data folder, so one SQLite file (enough for two nodes on one machine); the
events and the budgets go through Redis only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_server import RedisServer
from tests.support import Server, Ws, new_channel, post, unique, wait_until


class Nodes:
    def __init__(self, folder: Path, redis_url: str) -> None:
        self.a = Server(folder / "data")
        self.b = Server(folder / "data")
        self.b.log_path = folder / "b-server.log"
        self.redis_url = redis_url

    def start(self) -> None:
        self.a.start(REDIS_URL=self.redis_url)
        self.b.start(REDIS_URL=self.redis_url)

    def stop(self) -> None:
        self.a.stop()
        self.b.stop()


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Iterator[Nodes]:
    pair = Nodes(tmp_path_factory.mktemp("nodes"), redis_server.url())
    try:
        pair.start()
        yield pair
    finally:
        pair.stop()


def test_a_socket_on_one_node_receives_a_message_posted_through_the_other(nodes: Nodes) -> None:
    with nodes.a.login() as owner_a, nodes.b.login() as owner_b:
        channel = new_channel(owner_a)
        with Ws(nodes.a, owner_a.token) as ws:
            ws.subscribe(channel["id"])
            text = unique("from B ")
            message_id = post(owner_b, channel["id"], text)
            event = ws.expect("message", id=message_id)
            assert event["data"]["content"] == text
            post(owner_a, channel["id"], "and from A")
            ws.expect("message", content="and from A")
            assert [e["data"]["id"] for e in ws.seen if e["type"] == "message"].count(
                message_id
            ) == 1


def test_the_message_rate_limit_counts_across_both_nodes(nodes: Nodes) -> None:
    with nodes.a.login() as owner_a, nodes.b.login() as owner_b:
        limits = {"messagesPerMinute": 1, "messageBurst": 4}
        owner_a.ok("PUT", "/api/settings", json={"limits": limits})
        wait_until(
            lambda: owner_b.ok("GET", "/api/settings")["settings"]["limits"]["messageBurst"] == 4,
            what="the settings change reaching node B",
        )
        channel = new_channel(owner_a)
        answers = [
            (owner_a, owner_b)[n % 2].post(
                "/api/messages", json={"channelId": channel["id"], "content": f"#{n}"}
            )
            for n in range(6)
        ]
        assert [r.status_code for r in answers] == [200] * 4 + [429] * 2
        assert answers[-1].json()["error"]
        assert answers[-1].headers["Retry-After"]
        owner_a.ok("PUT", "/api/settings", json={"limits": {"messageBurst": 100_000}})


def test_login_throttling_counts_failures_on_both_nodes(nodes: Nodes) -> None:
    """Ten wrong passwords spread over both nodes lock the address out of either."""
    for n in range(10):
        node: Server = (nodes.a, nodes.b)[n % 2]
        with node.client() as client:
            wrong = client.post("/api/login", json={"password": "not the key"})
            assert wrong.status_code == 401
    for node in (nodes.a, nodes.b):
        with node.client() as client:
            refused = client.post("/api/login", json={"password": node.owner_key})
            assert refused.status_code == 429
            assert refused.headers["Retry-After"]
