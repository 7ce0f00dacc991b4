"""Two real `palaver serve` nodes on one Redis: what one node does, the other hears and counts.

Both nodes use one data folder, so one SQLite file (enough for two nodes on one machine); the
events and the budgets go through Redis only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis import Redis

from tests.redis_server import RedisServer
from tests.support import (
    OWNER_KEY,
    Guest,
    Server,
    Ws,
    free_port,
    new_channel,
    post,
    unique,
    wait_until,
)


class Nodes:
    """Node A and node B, and the owner logged in on each."""

    def __init__(self, folder: Path, redis_url: str) -> None:
        self.a = Server(folder / "data")
        self.b = Server(folder / "data")
        self.b.log_path = folder / "b-server.log"
        self.redis_url = redis_url

    def start(self) -> None:
        self.a.start(REDIS_URL=self.redis_url)
        self.b.start(REDIS_URL=self.redis_url)
        self.owner_a = self.a.login()
        self.owner_b = self.b.login()

    def stop(self) -> None:
        for owner in (getattr(self, "owner_a", None), getattr(self, "owner_b", None)):
            if owner is not None:
                owner.close()
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
    channel = new_channel(nodes.owner_a)
    with Ws(nodes.a, nodes.owner_a.token) as ws:
        ws.subscribe(channel["id"])
        text = unique("from B ")
        message_id = post(nodes.owner_b, channel["id"], text)
        event = ws.expect("message", id=message_id)
        assert event["data"]["content"] == text
        post(nodes.owner_a, channel["id"], "and from A")
        ws.expect("message", content="and from A")
        heard = [e["data"]["id"] for e in ws.seen if e["type"] == "message"]
        assert heard.count(message_id) == 1


def test_the_message_rate_limit_counts_across_both_nodes(nodes: Nodes) -> None:
    with Guest(nodes.a, nodes.owner_a) as guest, nodes.b.login(guest.key) as guest_b:
        channel = new_channel(nodes.owner_a, member_ids=[guest.id])
        set_limits(nodes, {"messagesPerMinute": 1, "messageBurst": 4})
        try:
            answers = [
                (guest.api, guest_b)[n % 2].post(
                    "/api/messages", json={"channelId": channel["id"], "content": f"#{n}"}
                )
                for n in range(6)
            ]
        finally:
            set_limits(nodes, {"messagesPerMinute": 100_000, "messageBurst": 100_000})
        assert [r.status_code for r in answers] == [200] * 4 + [429] * 2
        assert answers[-1].json()["error"]
        assert answers[-1].headers["Retry-After"]


def set_limits(nodes: Nodes, limits: dict[str, int]) -> None:
    """Through node A; in force on B once the control event has reached it."""
    nodes.owner_a.ok("PUT", "/api/settings", json={"limits": limits})

    def on_b() -> dict[str, int]:
        settings: dict[str, dict[str, int]] = nodes.owner_b.ok("GET", "/api/settings")["settings"]
        return settings["limits"]

    wait_until(
        lambda: all(on_b()[name] == value for name, value in limits.items()),
        what="the settings change reaching node B",
    )


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


def test_nodes_hear_each_other_again_after_redis_drops_their_connections(nodes: Nodes) -> None:
    """Once subscribed again, node A closes its sockets (1012: events may have been missed
    meanwhile, docs/FAULTS.md) and a socket that comes back hears node B's messages."""
    channel = new_channel(nodes.owner_a)
    admin = Redis.from_url(nodes.redis_url)
    with admin, Ws(nodes.a, nodes.owner_a.token) as ws:
        ws.subscribe(channel["id"])
        assert admin.client_kill_filter(_type="pubsub") >= 2
        admin.client_kill_filter(_type="normal", skipme=True)
        assert ws.expect_close(timeout=15) == 1012
    with Ws(nodes.a, nodes.owner_a.token) as ws:
        ws.subscribe(channel["id"])
        deadline = time.monotonic() + 10
        while True:
            message_id = post(nodes.owner_b, channel["id"], unique("after "))
            try:
                ws.expect("message", timeout=0.5, id=message_id)
                break
            except TimeoutError:
                assert time.monotonic() < deadline, "node A never heard node B again"
    assert "lost the Redis subscription" in nodes.a.read_log()


@pytest.mark.parametrize(
    ("redis_url", "says"),
    [
        ("redis://127.0.0.1:{port}/0", "Redis cannot be reached at 127.0.0.1:"),
        ("http://127.0.0.1:{port}/", "REDIS_URL is not a Redis URL"),
    ],
)
def test_a_node_without_redis_exits_with_status_2_and_one_line(
    tmp_path: Path, redis_url: str, says: str
) -> None:
    """A node that cannot hear the others must not serve; the operator learns why at once."""
    env = {**os.environ, "OWNER_KEY": OWNER_KEY, "REDIS_URL": redis_url.format(port=free_port())}
    done = subprocess.run(
        [sys.executable, "-m", "palaver", "serve", "--data-dir", str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert not (tmp_path / "data").exists()
