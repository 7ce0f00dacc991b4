"""Two real `palaver serve` nodes behind a real nginx running the shipped `deploy/nginx.conf`.

The nodes share one PostgreSQL database (a real pgserver), one data folder for uploads, and
one real `redis-server`; nginx balances round-robin between
them and upgrades `/ws`. Every request goes through nginx, whose access log says which node
served it (found by the `X-Request-Id` nginx returns); only the checks of what one node holds
ask that node directly.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import stall, text
from tests.nginx_server import Nginx
from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Api, Server, Ws, history, new_channel, unique, wait_until

PUBLIC_NAME = "chat.example.test"
WIDE = {"messagesPerMinute": 100_000, "messageBurst": 100_000, "maxMessageChars": 32_000}


class Cluster:
    """Node A and node B on one database and one Redis, nginx in front, the owner logged in
    through nginx."""

    def __init__(self, folder: Path, database_url: str, redis_url: str, **more_env: str) -> None:
        env = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "PALAVER_TRUST_PROXY": "1",
            "PALAVER_ALLOWED_HOSTS": PUBLIC_NAME,
            **more_env,
        }
        self.a = Server(folder / "data", env=env)
        self.b = Server(folder / "data", env=env)
        self.b.log_path = folder / "b-server.log"
        self.folder = folder

    def start(self) -> None:
        self.a.start()
        self.b.start()
        self.nginx = Nginx(
            self.folder / "nginx", [f"127.0.0.1:{self.a.port}", f"127.0.0.1:{self.b.port}"]
        )
        self.nginx.start()
        self.owner = self.login()

    def stop(self) -> None:
        if getattr(self, "owner", None) is not None:
            self.owner.close()
        if getattr(self, "nginx", None) is not None:
            self.nginx.stop()
        self.a.stop()
        self.b.stop()

    def login(self, password: str | None = None) -> Api:
        api = Api(self.nginx.base_url)
        response = api.post("/api/login", json={"password": password or self.a.owner_key})
        assert response.status_code == 200, response.text
        return api

    def node_of(self, response: httpx.Response) -> Server:
        """The node that served a response that came through nginx."""
        return self.node_at(self.nginx.upstream_of(response.headers["X-Request-Id"]))

    def node_at(self, upstream: str) -> Server:
        return {f"127.0.0.1:{n.port}": n for n in (self.a, self.b)}[upstream]

    def other(self, node: Server) -> Server:
        return self.b if node is self.a else self.a

    def direct(self, node: Server, api: Api) -> Api:
        """The same session, talking to one node without nginx."""
        return node.client(cookies={"session": api.token})

    def set_limits(self, limits: dict[str, int]) -> None:
        """Through nginx; returns once both nodes hold the new limits."""
        self.owner.ok("PUT", "/api/settings", json={"limits": limits})
        self.until_both_hold(
            lambda held: all(held["limits"][name] == value for name, value in limits.items())
        )

    def until_both_hold(self, holds: Callable[[dict[str, Any]], bool]) -> None:
        """Wait until the settings each node holds satisfy `holds`."""
        for node in (self.a, self.b):
            self._until_node_holds(node, holds)

    def _until_node_holds(self, node: Server, holds: Callable[[dict[str, Any]], bool]) -> None:
        with self.direct(node, self.owner) as api:
            wait_until(
                lambda: holds(api.ok("GET", "/api/settings")["settings"]),
                what=f"the settings change reaching the node on {node.port}",
            )


@contextmanager
def running(nodes: Cluster) -> Iterator[Cluster]:
    """The cluster started, with limits wide enough for any test; stopped whatever happens."""
    try:
        nodes.start()
        nodes.set_limits(WIDE)
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, pg: PgServer, redis_server: RedisServer
) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("cluster")
    with running(Cluster(folder, pg.new_database("cluster"), redis_server.url())) as nodes:
        yield nodes


def post(api: Api, channel_id: str, content: str) -> httpx.Response:
    response = api.post("/api/messages", json={"channelId": channel_id, "content": content})
    assert response.status_code == 200, response.text
    return response


def socket_node(cluster: Cluster, before: int) -> Server:
    """The node that served the socket opened after `before` sockets: nginx logs a socket
    once it has closed."""
    wait_until(
        lambda: len(cluster.nginx.upstreams_of("GET /ws")) > before, what="nginx logging the socket"
    )
    return cluster.node_at(cluster.nginx.upstreams_of("GET /ws")[before])


def test_a_socket_through_nginx_receives_a_message_posted_through_nginx_to_the_other_node(
    cluster: Cluster,
) -> None:
    channel = new_channel(cluster.owner)
    text_sent = unique("across nginx ")
    before = len(cluster.nginx.upstreams_of("GET /ws"))
    with Ws(cluster.nginx, cluster.owner.token) as ws:
        ws.subscribe(channel["id"])
        posted = post(cluster.owner, channel["id"], text_sent)
        event = ws.expect("message", id=posted.json()["id"])
        assert event["data"]["content"] == text_sent
    assert cluster.node_of(posted) is cluster.other(socket_node(cluster, before))


def test_an_agent_reply_streams_to_a_socket_on_the_other_node(cluster: Cluster) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(text("Hello", " from", " the", " other", " node.", delay=0.05))
        provider = {"type": "openai", "baseUrl": f"{fake.url}/v1"}
        cluster.owner.ok("PUT", "/api/settings", json={"providers": {"oai": provider}})
        cluster.until_both_hold(
            lambda held: held["providers"].get("oai", {}).get("baseUrl") == provider["baseUrl"]
        )
        agent = cluster.owner.ok(
            "POST", "/api/agents", json={"name": unique("Far"), "model": "oai/gpt-test"}
        )["agent"]
        channel = new_channel(cluster.owner, agent_ids=[agent["id"]])
        before = len(cluster.nginx.upstreams_of("GET /ws"))
        with Ws(cluster.nginx, cluster.owner.token) as ws:
            ws.subscribe(channel["id"])
            asked = post(cluster.owner, channel["id"], f"@{agent['name']} hello")
            start = ws.expect("stream_start", agentId=agent["id"])
            end = ws.expect("stream_end", messageId=start["data"]["messageId"])
            reply = ws.expect("message", id=end["data"]["messageId"])
        chunks = [e["data"]["content"] for e in ws.seen if e["type"] == "stream_chunk"]
        assert "".join(chunks) == "Hello from the other node."
        assert len(chunks) > 1
        assert reply["data"]["content"] == "Hello from the other node."
        assert fake.model_requests, "the model was never asked"
    assert cluster.node_of(asked) is cluster.other(socket_node(cluster, before))


def test_the_message_rate_limit_counts_across_both_nodes_behind_nginx(cluster: Cluster) -> None:
    body = cluster.owner.ok("POST", "/api/guests", json={"name": unique("guest-")})
    with cluster.login(body["key"]) as guest:
        channel = new_channel(cluster.owner, member_ids=[body["user"]["id"]])
        cluster.set_limits({"messagesPerMinute": 1, "messageBurst": 4})
        try:
            answers = [
                guest.post("/api/messages", json={"channelId": channel["id"], "content": f"#{n}"})
                for n in range(6)
            ]
        finally:
            cluster.set_limits(WIDE)
    assert [r.status_code for r in answers] == [200] * 4 + [429] * 2
    assert answers[-1].json()["error"]
    assert answers[-1].headers["Retry-After"]
    served = Counter(cluster.node_of(r).port for r in answers)
    assert served == {cluster.a.port: 3, cluster.b.port: 3}


def test_a_settings_change_through_one_node_is_in_force_on_the_other_within_a_second(
    cluster: Cluster,
) -> None:
    channel = new_channel(cluster.owner)
    too_long = "x" * 40
    changed = cluster.owner.put("/api/settings", json={"limits": {"maxMessageChars": 20}})
    changed_at = time.monotonic()
    try:
        assert changed.status_code == 200, changed.text
        other = cluster.other(cluster.node_of(changed))
        with cluster.direct(other, cluster.owner) as api:
            while True:
                refused = api.post(
                    "/api/messages", json={"channelId": channel["id"], "content": too_long}
                )
                if refused.status_code != 200:
                    break
                assert time.monotonic() - changed_at < 1, "the other node still takes 40 chars"
                time.sleep(0.02)
        assert time.monotonic() - changed_at < 1
        assert refused.status_code in (400, 413, 422), refused.text
        assert "20" in refused.json()["error"]
    finally:
        cluster.set_limits(WIDE)


def test_requests_by_the_public_name_pass_and_others_are_refused(cluster: Cluster) -> None:
    """nginx passes the Host on as the browser sent it, port included: the nodes check it
    against PALAVER_ALLOWED_HOSTS, and a socket's Origin against it."""
    with httpx.Client(base_url=cluster.nginx.base_url) as client:
        public = client.get("/api/me", headers={"Host": f"{PUBLIC_NAME}:{cluster.nginx.port}"})
        assert public.status_code == 401, public.text
        foreign = client.get("/api/me", headers={"Host": "rebound.example.test"})
        assert foreign.status_code == 400
        assert foreign.json()["error"]
    page = f"http://127.0.0.1:{cluster.nginx.port}"
    with Ws(cluster.nginx, cluster.owner.token, origin=page) as ws:
        ws.send({"type": "ping"})
        assert ws.recv()["type"] == "pong"


def test_nginx_refuses_a_body_over_the_upload_limit_with_a_json_error(cluster: Cluster) -> None:
    too_large = cluster.owner.post("/api/upload", content=b"x" * (27 * 1024 * 1024))
    assert too_large.status_code == 413
    assert too_large.json()["error"]


def test_a_reply_running_on_one_node_is_cancelled_through_the_other(cluster: Cluster) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(stall(text("Long", " story", " never", " ends"), after=2))
        provider = {"type": "openai", "baseUrl": f"{fake.url}/v1"}
        cluster.owner.ok("PUT", "/api/settings", json={"providers": {"slow": provider}})
        cluster.until_both_hold(
            lambda held: held["providers"].get("slow", {}).get("baseUrl") == provider["baseUrl"]
        )
        agent = cluster.owner.ok(
            "POST", "/api/agents", json={"name": unique("Slow"), "model": "slow/gpt-test"}
        )["agent"]
        channel = new_channel(cluster.owner, agent_ids=[agent["id"]])
        with Ws(cluster.nginx, cluster.owner.token) as ws:
            ws.subscribe(channel["id"])
            asked = post(cluster.owner, channel["id"], f"@{agent['name']} tell me")
            start = ws.expect("stream_start", agentId=agent["id"])
            reply_id = start["data"]["messageId"]
            ws.expect("stream_chunk")
            elsewhere = cluster.direct(cluster.other(cluster.node_of(asked)), cluster.owner)
            try:
                elsewhere.ok("POST", f"/api/messages/{reply_id}/cancel")
            finally:
                elsewhere.close()
            end = ws.expect("stream_end", messageId=reply_id)
            stored = ws.expect("message", id=reply_id)["data"]
        assert end["data"] == {"messageId": reply_id, "cancelled": True}
        assert stored["content"] == "Long story" and stored["metadata"]["cancelled"] is True


def test_a_schedule_fires_once_with_both_nodes_running_their_schedulers(cluster: Cluster) -> None:
    agent = cluster.owner.ok("POST", "/api/agents", json={"name": unique("Clock")})["agent"]
    channel = new_channel(cluster.owner, agent_ids=[agent["id"]])
    due = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    made = [
        cluster.owner.ok(
            "POST",
            "/api/schedules",
            json={
                "agentId": agent["id"],
                "channelId": channel["id"],
                "prompt": f"Chime {n}.",
                "at": due,
            },
        )["schedule"]
        for n in range(4)
    ]

    def prompts() -> Counter[str]:
        return Counter(
            m["metadata"]["scheduleId"]
            for m in history(cluster.owner, channel["id"])
            if m["metadata"].get("scheduleId") and m["userId"] is None and m["agentId"] is None
        )

    wait_until(lambda: len(prompts()) == len(made), timeout=20, what="every schedule's prompt")
    time.sleep(1.5)
    assert prompts() == Counter({s["id"]: 1 for s in made})
    listed = {s["id"]: s for s in cluster.owner.ok("GET", "/api/schedules")["schedules"]}
    assert all(listed[s["id"]]["lastResult"]["status"] == "fired" for s in made)
