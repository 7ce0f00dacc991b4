"""Redis restarted under load (issue 25): two nodes on one PostgreSQL and a `redis-server` of
this module's own, stopped and started again on its port while threads post through both nodes
and a client on each node follows the channel as the web client does.

What must hold (docs/FAULTS.md, "Redis restarts"): every post is answered 2xx (stored, never a
500), each stored once; each client's timeline ends up exactly the channel's history, no message
heard twice on its sockets and each poster's messages heard in the order posted; the nodes
subscribe again by themselves and close their sockets (1012, the reason naming from where to
catch up) so that the clients catch up; and the rate limit is shared by both nodes again
afterwards.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ulid import ULID
from websockets.exceptions import ConnectionClosed, InvalidStatus

from palaver.realtime.hub import MISSED_MARGIN
from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Api, Guest, Server, Ws, history, new_channel, wait_until
from tests.test_cluster import Cluster, running

DOWN_SECONDS = 2.0
PAGE = 200
MISSED = re.compile(r"events missed after (msg_[0-9A-HJKMNP-TV-Z]{26})")


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """Not the suite's shared server: this one is stopped and started again."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, pg: PgServer, redis: RedisServer
) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("redisfaults")
    with running(Cluster(folder, pg.new_database("redisfaults"), redis.url())) as nodes:
        yield nodes


class Follower(threading.Thread):
    """A client of one node doing what the web client does: it follows one channel on a
    socket and, after every reconnect, catches up from history (the newest pages, back past the
    newest message it knew: a message of the other node may have a smaller id and be stored
    later, so `after` the newest alone could leave it out). After a 1012 close whose reason
    names a boundary, it pages back past the boundary too: during the outage it heard its own
    node's messages live, newer than the other node's it missed."""

    def __init__(self, node: Server, token: str, channel_id: str) -> None:
        super().__init__(daemon=True)
        self.node, self.token, self.channel_id = node, token, channel_id
        self.heard: list[list[tuple[str, str]]] = []
        """Per connection: (id, content) of each `message` event, in the order heard."""
        self.fetched: dict[str, str] = {}
        self.closes: list[int] = []
        self.reasons: list[str] = []
        """The reason of each 1012 close."""
        self.missed_after: str | None = None
        self.following = threading.Event()
        self.done = threading.Event()
        self.failure: BaseException | None = None

    def timeline(self) -> list[str]:
        known = set(self.fetched) | {i for heard in self.heard for i, _ in heard}
        return sorted(known)

    def run(self) -> None:
        try:
            with self.node.client(cookies={"session": self.token}) as api:
                while not self.done.is_set():
                    self._follow(api)
        except BaseException as exc:
            self.failure = exc

    def _follow(self, api: Api) -> None:
        try:
            ws = Ws(self.node, self.token)
        except (OSError, InvalidStatus, ConnectionClosed, TimeoutError):
            time.sleep(0.1)
            return
        heard: list[tuple[str, str]] = []
        with ws:
            try:
                ws.subscribe(self.channel_id)
                if self.heard:
                    self._catch_up(api)
                self.heard.append(heard)
                self.following.set()
                while not self.done.is_set():
                    try:
                        event = ws.recv(timeout=0.2)
                    except TimeoutError:
                        continue
                    data = event.get("data", {})
                    if event["type"] == "message" and data.get("channelId") == self.channel_id:
                        heard.append((data["id"], data["content"]))
            except ConnectionClosed as closed:
                self.closes.append(closed.rcvd.code if closed.rcvd is not None else 1006)
                if closed.rcvd is not None and closed.rcvd.code == 1012:
                    self.reasons.append(closed.rcvd.reason)
                    found = MISSED.fullmatch(closed.rcvd.reason)
                    if found:
                        boundary = found[1]
                        self.missed_after = min(boundary, self.missed_after or boundary)

    def _catch_up(self, api: Api) -> None:
        known = max(self.timeline(), default="")
        if self.missed_after is not None:
            known = min(known, self.missed_after)
        before: str | None = None
        while True:
            params: dict[str, Any] = {"channelId": self.channel_id, "limit": PAGE}
            if before is not None:
                params["before"] = before
            page = api.ok("GET", "/api/messages", params=params)["messages"]
            self.fetched.update((m["id"], m["content"]) for m in page)
            if len(page) < PAGE or page[0]["id"] <= known:
                self.missed_after = None
                return
            before = page[0]["id"]


class Poster(threading.Thread):
    """Posts `<name>-<n>` for n = 0, 1, … through one node until told to stop."""

    def __init__(self, name: str, node: Server, token: str, channel_id: str) -> None:
        super().__init__(daemon=True)
        self.name, self.node, self.token, self.channel_id = name, node, token, channel_id
        self.accepted: dict[str, str] = {}
        """id → content of each post answered 2xx."""
        self.answers: list[tuple[float, int, str]] = []
        """(when, status, Retry-After) of every answer."""
        self.done = threading.Event()

    def run(self) -> None:
        with self.node.client(cookies={"session": self.token}) as api:
            n = 0
            while not self.done.is_set():
                content = f"{self.name}-{n}"
                try:
                    response = api.post(
                        "/api/messages", json={"channelId": self.channel_id, "content": content}
                    )
                except httpx.TransportError:
                    self.answers.append((time.monotonic(), 0, ""))
                    continue
                retry = response.headers.get("Retry-After", "")
                self.answers.append((time.monotonic(), response.status_code, retry))
                if response.is_success:
                    self.accepted[response.json()["id"]] = content
                n += 1
                time.sleep(0.01)


def _in_posting_order(heard: list[tuple[str, str]]) -> bool:
    last: dict[str, int] = {}
    for _, content in heard:
        name, _, n = content.rpartition("-")
        if int(n) <= last.get(name, -1):
            return False
        last[name] = int(n)
    return True


def test_redis_restarted_under_load_loses_nothing_and_clients_catch_up(
    cluster: Cluster, redis: RedisServer
) -> None:
    channel = new_channel(cluster.owner)
    token = cluster.owner.token
    followers = [Follower(node, token, channel["id"]) for node in (cluster.a, cluster.b)]
    for follower in followers:
        follower.start()
        assert follower.following.wait(10)
    posters = [
        Poster(f"{node_name}{n}", node, token, channel["id"])
        for node_name, node in (("a", cluster.a), ("b", cluster.b))
        for n in range(2)
    ]
    try:
        for poster in posters:
            poster.start()
        time.sleep(1.0)
        redis.stop()
        down_from, stopped_at = time.monotonic(), time.time()
        time.sleep(DOWN_SECONDS)
        redis.start()
        back_at, started_at = time.monotonic(), time.time()
        # Both nodes subscribe again and close their sockets; the clients come back.
        wait_until(
            lambda: all(1012 in f.closes and len(f.heard) >= 2 for f in followers),
            timeout=20,
            what="both nodes closing their sockets for a catch-up after Redis came back",
        )
        time.sleep(1.0)
    finally:
        for poster in posters:
            poster.done.set()
        for poster in posters:
            poster.join(30)

    answers = [answer for poster in posters for answer in poster.answers]
    statuses = Counter(status for _, status, _ in answers)
    assert set(statuses) <= {200, 201}, f"every post is stored and answered: {statuses}"
    during = [status for when, status, _ in answers if down_from < when < back_at]
    times = sorted(round(when - down_from, 2) for when, _, _ in answers)
    assert len(during) >= 10, f"posts went on while Redis was away: {times}"

    accepted = {i: c for poster in posters for i, c in poster.accepted.items()}
    stored = _all_messages(cluster.owner, channel["id"])
    assert Counter(m["content"] for m in stored).most_common(1)[0][1] == 1
    assert {m["id"]: m["content"] for m in stored} == accepted
    order = [m["id"] for m in stored]
    assert order == sorted(order)

    for follower in followers:
        wait_until(
            lambda f=follower: f.timeline() == order,  # type: ignore[misc]
            timeout=15,
            what=f"the client of the node on {follower.node.port} catching up",
        )
        follower.done.set()
    for follower in followers:
        follower.join(10)
        assert follower.failure is None, follower.failure
        assert follower.timeline() == order
        heard = [i for connection in follower.heard for i, _ in connection]
        assert len(heard) == len(set(heard)), "no message heard twice"
        assert all(_in_posting_order(connection) for connection in follower.heard)
        assert set(follower.closes) == {1012}, follower.closes
        # Each close names from where to catch up: when its node lost Redis (the last it heard
        # before the stop, or the oldest event it could not send), less the clocks' margin.
        for reason in follower.reasons:
            found = MISSED.fullmatch(reason)
            assert found, f"the 1012 close names a boundary: {reason!r}"
            lost = ULID.from_str(found[1].removeprefix("msg_")).timestamp + MISSED_MARGIN
            assert stopped_at - 3 < lost < started_at, (stopped_at, lost, started_at)
        live = len(heard) / len(order)
        assert live > 0.5, f"most messages came live ({live:.0%})"


def _all_messages(api: Api, channel_id: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    before: str | None = None
    while True:
        params: dict[str, Any] = {"channelId": channel_id, "limit": PAGE}
        if before is not None:
            params["before"] = before
        page: list[dict[str, Any]] = api.ok("GET", "/api/messages", params=params)["messages"]
        messages[:0] = page
        if len(page) < PAGE:
            return messages
        before = page[0]["id"]


def test_rate_limits_are_kept_per_node_while_redis_is_away_and_shared_again_after(
    cluster: Cluster, redis: RedisServer
) -> None:
    channel = new_channel(cluster.owner)
    on_a = cluster.direct(cluster.a, cluster.owner)
    on_b = cluster.direct(cluster.b, cluster.owner)
    body = {"channelId": channel["id"], "content": "counted"}
    try:
        cluster.set_limits({"messagesPerMinute": 1, "messageBurst": 3})
        redis.stop()
        try:
            # Each node keeps a budget of its own: three posts each, then 429.
            for api in (on_a, on_b):
                codes = [api.post("/api/messages", json=body).status_code for _ in range(4)]
                assert codes == [200, 200, 200, 429], codes
        finally:
            redis.start()
        # The shared budget is back (a new Redis: a full bucket of three for both nodes).
        wait_until(
            lambda: on_a.get("/api/messages", params={"channelId": channel["id"]}).is_success,
            what="node A answering",
        )
        codes = [(on_a, on_b)[n % 2].post("/api/messages", json=body) for n in range(5)]
        assert [r.status_code for r in codes] == [200, 200, 200, 429, 429]
        assert all(float(r.headers["Retry-After"]) > 0 for r in codes[3:])
    finally:
        on_a.close()
        on_b.close()
        cluster.set_limits({"messagesPerMinute": 100_000, "messageBurst": 100_000})


def test_a_guest_deleted_while_redis_is_away_is_refused_by_the_other_node_once_it_is_back(
    cluster: Cluster, redis: RedisServer
) -> None:
    """Node B never hears the deletion, made through node A while Redis is down; the news that
    it missed events makes it drop what it cached (the guest's session among it)."""
    on_a = cluster.direct(cluster.a, cluster.owner)
    with on_a, Guest(cluster.b, on_a) as guest:
        channel = new_channel(on_a, member_ids=[guest.id])["id"]
        history(guest.api, channel)  # node B now holds the session and the channel
        redis.stop()
        try:
            on_a.ok("DELETE", f"/api/guests/{guest.id}")
            assert guest.api.get("/api/me").status_code == 200, "node B has not heard of it"
        finally:
            redis.start()
        wait_until(
            lambda: guest.api.get("/api/me").status_code == 401,
            timeout=15,
            what="node B refusing the deleted guest",
        )
        assert guest.api.get("/api/messages", params={"channelId": channel}).status_code == 401
